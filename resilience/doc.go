// Package resilience holds the pipeline stages that keep the gateway and its backends
// healthy under failure and overload: deadlines (the boundary's refusal and the hop budget
// every hop applies), rate limits (token buckets over the state store), idempotency (one
// run per key, replayed), admission control (a global adaptive concurrency limit and
// per-backend queues with backpressure), a single safe retry with a budget, and circuit
// breakers. Each stage owns its config struct beside its constructor; server wires
// them into the pipeline in the order chain.go documents. docs/resilience.md is the
// operator's guide.
package resilience
