// Package resilience holds the pipeline stages that keep the gateway and its backends
// healthy under failure and overload: deadlines (the boundary's refusal and the hop budget
// every hop applies), rate limits (token buckets over the state store), idempotency (one
// run per key, replayed), admission control (a global adaptive concurrency limit and
// per-backend queues with backpressure), a single safe retry with a budget, and circuit
// breakers. docs/resilience.md is the operator's guide.
//
// Each stage owns its config struct beside its constructor, which takes the section as a
// pointer and returns no stage (nil) when it is absent:
//
//	Deadline(cfg, now)                             always on
//	NewRateLimitStage(cfg, kv, now, log)           rate_limits
//	NewIdempotencyStage(cfg, kv, classify, log)    idempotency
//	NewAdmission(cfg, deps).Middleware()           admission (the control keeps the queues' state)
//	NewRetryStage(cfg, opts)                       retries
//	NewBreakers(cfg).Middleware(backendOf)         breakers (the set keeps the breakers' states)
//
// server/chain.go wires them into the pipeline in the order it documents. A section that
// does not compile (a configuration built in code, unchecked) refuses every call rather
// than serve without it.
//
// The stages never switch on concrete targets: a call's backend (its breaker, retry
// budget, admission queue) is what its target names (gateway.BackendOf), and a call its
// target calls unretryable (gateway.Unretryable) is never retried. What a stage needs to
// know of the policy — a call's mutation class — is a function the server passes
// (Classifier, RetryOptions.Repeatable).
//
// Imports: the core (gateway, schemas, codecs) and state only; never its siblings auth,
// routing or observability (DESIGN.md, checked by internal/archtest).
package resilience
