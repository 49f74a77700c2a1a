package server

import (
	"log/slog"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/state"
)

// pipeline returns the handler every call of one configuration runs through. The order of
// the stages lives here and only here; a call passes them top to bottom:
//
//	metrics → deadline → rate limit → route → policy → approval → idempotency → admission → retry → breaker → hop token → dispatch
//
// Authentication runs at ingress, before decoding, and the trace id is assigned there too
// (with tracing on, the ingress span's: tracing.go, which also names the spans below);
// the policy stage runs after route because it decides on the target the call reaches. A stage whose config section is
// absent is passed as nil and is not in the chain.
//
// pol is the configuration's compiled policy; kv is the process's state store (pending
// approvals live there, beyond one configuration); ring returns the process's signing key
// ring, which mints downstream tokens; log receives the stages' logs, the approval audit
// among them; m are the process's metrics (nil: off).
func pipeline(cfg *Config, pol runtimePolicy, table *routing.Table, now func() time.Time, kv state.KV, ring func() *auth.KeyRing, log *slog.Logger,
	m *observability.Metrics) gateway.Handler {
	traced := cfg.Tracing != nil
	return gateway.Chain(routing.Dispatch,
		// metrics: above everything, so every outcome is counted — refusals of the stages
		// below included — with the call's whole time in the pipeline; gives the targets
		// the gateway.Observer their transcoding, streams and tool calls report to. Nil
		// when metrics are off.
		metricsStage(m, table),
		// deadline: always on — refuses a call with less than ε left, then bounds its context
		// by the call's absolute deadline so no stage below can wait past it, and gives every
		// hop the reserve and ε it applies to its own deadline (gateway.HopBudget).
		resilience.Deadline(cfg.Deadline, now),
		// rate limit: one token from the caller's bucket of the most specific rule for the
		// method and its tier, kept in the state store; an empty bucket refuses with 5001
		// and retry_after_ms, before the call costs a route; refusals are counted by rule.
		// Nil without rate_limits.
		countRateLimits(cfg.rateLimitChainStage(kv, now, log), m),
		// route: method → target, or METHOD_NOT_FOUND.
		table.Route,
		// policy: zone → rule → scopes → condition (auth/policy.NewStage), on what the
		// routed target says the call reaches (gateway.ReachOf); refuses with 4002
		// (missing scopes) or 4000, and records the decision — approval needed or not —
		// in the context for the approval stage. A policy that does not compile refuses
		// every call (policy.NewRefusingStage). Nil without policy. Traced, its time is the
		// span "policy".
		stageSpan(traced, "policy", pol.stage()),
		// approval: a call whose decision needs approval waits, held in the state store,
		// until an operator approves it (it runs), denies it or it expires (4003)
		// (auth/approval.NewStage); in the chain whenever the policy stage is.
		cfg.approvalChainStage(kv, now, log),
		// idempotency: strips params.idempotency_key; a state-changing call with one runs
		// once per caller, method and key — repeats replay its kept success or wait for it,
		// the same key with other params is -32602. After approval, so only an approved call
		// is recorded. Nil without idempotency.
		cfg.idempotencyChainStage(kv, log),
		// admission: the global adaptive concurrency limit (operator-zone calls bypass it),
		// then the target's concurrency limit and queue — past Q_max a call is held in
		// proportion to the excess, past 2·Q_max it is refused at once; refusals are 5002
		// with retry_after_ms, counted by backend and reason. Above retry, so a retried call
		// keeps its place. Nil without admission. Traced, the wait is the span "admission".
		stageSpan(traced, "admission", countAdmissions(cfg.admissionChainStage(table, now, log, m), m)),
		// retry: one more attempt, after a short back-off, of a call that failed with
		// UNAVAILABLE before its request reached the backend — when its mutation class is
		// READ_ONLY or IDEMPOTENT_WRITE or it carries an idempotency key, it is no NEKTE
		// task, has not read its input, has more than 2ε left, and its backend's retry
		// budget has room; each retry is counted by backend. Above the breaker, so each
		// attempt is judged by it. Nil without retries. Traced, each retry is an event.
		retryEvents(traced, countRetries(cfg.retryChainStage(), m)),
		// breaker: one circuit breaker per backend; an open one refuses at once with
		// CIRCUIT_OPEN and retry_after_ms, backend faults (not the caller's mistakes) in a
		// sliding window open it. Nil without breakers. Traced, a refusal is an event.
		breakerEvents(traced, cfg.breakerChainStage()),
		// hop token: the credential the target sends its backend — a token minted for this
		// hop (caller's scopes ∩ the rule's, aud = the target, lifetime ≤ the deadline), the
		// caller's own (passthrough) or none, as the target's downstream_token says
		// (auth.NewHopTokenStage); each token minted counts in gatehouse_tokens_minted_total.
		auth.NewHopTokenStage(ring, m.TokenMinted),
	)
}
