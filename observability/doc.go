// Package observability gives every call a trace id and the gateway a structured logger,
// exports traces (OTLP) and metrics (Prometheus), and keeps the access log; their
// third-party types (OTel, Prometheus) stay in this package.
//
// It also owns the decorators that put counters and spans around the pipeline and its
// stages, which server/chain.go places:
//
//	MetricsStage(m, routed, version)   the top of the pipeline: every call's outcome and duration
//	CountRateLimits(stage, m)          refusals of the rate-limit stage, by rule
//	CountAdmissions(stage, m)          refusals of the admission stage, by backend and reason
//	CountRetries(stage, m)             retries, by backend
//	StageSpan(traced, name, stage)     the time a call spends in a stage, as a span
//	RetryEvents(traced, stage)         each retry, as an event of the call's span
//	BreakerEvents(traced, stage)       each breaker refusal, as an event of the call's span
//
// Each leaves an absent stage absent (nil) and a stage it has nothing to add to (metrics or
// tracing off) as it is. They learn what a call reaches from its target, through the core's
// optional interfaces (gateway.BackendOf, gateway.ReachOf), never by its concrete type.
//
// Imports: the core (gateway, schemas, codecs) and state only; never its siblings auth,
// resilience or routing (DESIGN.md, checked by internal/archtest).
package observability
