// Package resilience holds the pipeline stages that keep the gateway and its backends
// healthy: deadlines now; circuit breakers, admission control, rate limits, retries and
// idempotency as they land. Each stage owns its config struct beside its constructor.
package resilience
