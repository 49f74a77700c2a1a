package server

import (
	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/routing"
)

// pipelineParams are what one configuration's pipeline is built from: the process its
// stages keep their state in and report to, and the configuration's own parts.
type pipelineParams struct {
	process
	cfg   *Config
	pol   runtimePolicy // the configuration's compiled policy
	table *routing.Table
	prev  *runtime // the runtime replaced, nil at start: unchanged breakers are kept (carry.go)
}

// built are the parts of a pipeline the runtime reads besides running calls through it:
// the breakers (for /readyz and the metrics) and the admission control (for the metrics),
// nil when their sections are absent.
type built struct {
	breakers  *resilience.Breakers
	admission *resilience.AdmissionControl
}

// pipeline returns the handler every call of one configuration runs through, and the parts
// of it the runtime reads. The order of the stages lives here and only here; a call passes
// them top to bottom:
//
//	metrics → deadline → rate limit → redeem → route → policy → approval → idempotency → admission → retry → breaker → hop token → dispatch
//
// Authentication runs at ingress, before decoding, and the trace id is assigned there too
// (with tracing on, the ingress span's: tracing.go; the stage spans and events below are
// observability's decorators); the policy stage runs after route because it decides on the
// target the call reaches. A stage whose config section is absent is passed as nil and is
// not in the chain. The stages that need a call's backend — admission, retry, breaker,
// and their metrics and events — ask its target (gateway.BackendOf).
func pipeline(p pipelineParams) (gateway.Handler, built) {
	cfg, m := p.cfg, p.m
	traced := cfg.Tracing != nil
	parts := built{breakers: p.breakers(), admission: newAdmission(p)}
	return gateway.Chain(routing.Dispatch,
		// metrics: above everything, so every outcome is counted — refusals of the stages
		// below included — with the call's whole time in the pipeline; gives the targets
		// the gateway.Observer their transcoding, streams and tool calls report to. Nil
		// when metrics are off.
		observability.MetricsStage(m, p.table.Names, protocolVersion),
		// deadline: always on — refuses a call with less than ε left, then bounds its context
		// by the call's absolute deadline so no stage below can wait past it, and gives every
		// hop the reserve and ε it applies to its own deadline (gateway.HopBudget).
		resilience.Deadline(cfg.Deadline, p.now),
		// rate limit: one token from the caller's bucket of the most specific rule for the
		// method and its tier, kept in the state store; an empty bucket refuses with 5001
		// and retry_after_ms, before the call costs a route; refusals are counted by rule.
		// Nil without rate_limits.
		observability.CountRateLimits(resilience.NewRateLimitStage(cfg.RateLimits, p.kv, p.now, p.log), m),
		// redeem: approvals.redeem, which has no target, answers an asynchronous approval —
		// 4004 while pending, 4003 once denied or expired, and once approved the held call,
		// replayed from here down (route, policy, approval letting it through, ...) exactly
		// once (auth/approval.NewRedeemStage). In the chain whenever the policy stage is.
		cfg.approvalRedeemStage(p.kv, p.now, p.log),
		// route: method → target, or METHOD_NOT_FOUND.
		p.table.Route,
		// policy: zone → rule → scopes → condition (auth/policy.NewStage), on what the
		// routed target says the call reaches (gateway.ReachOf); refuses with 4002
		// (missing scopes) or 4000, and records the decision — approval needed or not —
		// in the context for the approval stage. A policy that does not compile refuses
		// every call (policy.NewRefusingStage). Nil without policy. Traced, its time is the
		// span "policy".
		observability.StageSpan(traced, "policy", p.pol.stage()),
		// approval: a call whose decision needs approval waits, held in the state store,
		// until an operator approves it (it runs), denies it or it expires (4003)
		// (auth/approval.NewStage); in the chain whenever the policy stage is.
		cfg.approvalChainStage(p.kv, p.now, p.log),
		// idempotency: strips params.idempotency_key; a state-changing call (policy.ChangesState)
		// with one runs once per caller, method and key — repeats replay its kept success or
		// wait for it, the same key with other params is -32602. After approval, so only an
		// approved call is recorded. Nil without idempotency.
		resilience.NewIdempotencyStage(cfg.Idempotency, p.kv, policy.ChangesState, p.log),
		// admission: the global adaptive concurrency limit (operator-zone calls bypass it),
		// then the target's concurrency limit and queue — past Q_max a call is held in
		// proportion to the excess, past 2·Q_max it is refused at once; refusals are 5002
		// with retry_after_ms, counted by backend and reason. Above retry, so a retried call
		// keeps its place. Nil without admission. Traced, the wait is the span "admission".
		observability.StageSpan(traced, "admission", observability.CountAdmissions(parts.admission.Middleware(), m)),
		// retry: one more attempt, after a short back-off, of a call that failed with
		// UNAVAILABLE before its request reached the backend — when its mutation class is
		// READ_ONLY or IDEMPOTENT_WRITE (policy.Repeatable) or it carries an idempotency key, its
		// target does not call it unretryable (a NEKTE task), it has not read its input, has
		// more than 2ε left, and its backend's retry budget has room; each retry is counted
		// by backend. Above the breaker, so each attempt is judged by it. Nil without
		// retries. Traced, each retry is an event.
		observability.RetryEvents(traced, observability.CountRetries(resilience.NewRetryStage(cfg.Retries, cfg.retryOptions()), m)),
		// breaker: one circuit breaker per backend; an open one refuses at once with
		// CIRCUIT_OPEN and retry_after_ms, backend faults (not the caller's mistakes) in a
		// sliding window open it. Nil without breakers. Traced, a refusal is an event.
		observability.BreakerEvents(traced, parts.breakers.Middleware(gateway.BackendOf)),
		// hop token: the credential the target sends its backend — a token minted for this
		// hop (caller's scopes ∩ the rule's, aud = the target, lifetime ≤ the deadline), the
		// caller's own (passthrough) or none, as the target's downstream_token says
		// (auth.NewHopTokenStage); each token minted counts in gatehouse_tokens_minted_total.
		auth.NewHopTokenStage(p.ring, m.TokenMinted),
	), parts
}
