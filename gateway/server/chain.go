package server

import (
	"log/slog"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/gateway/state"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/routing"
)

// pipeline returns the handler every call of one configuration runs through. The order of
// the stages lives here and only here; a call passes them top to bottom:
//
//	deadline → route → policy → approval → hop token → dispatch
//
// The full order the stages take as they land is
// trace → metrics → deadline → authorize → rate limit → idempotency → admission → route →
// policy → approval → breaker/retry → hop token → dispatch. Authentication runs at ingress, before decoding; the
// policy stage runs after route because it decides on the target the call reaches. A stage whose config section is absent is passed as nil and is
// not in the chain. The trace id is assigned at ingress, before decoding.
//
// kv is the process's state store (pending approvals live there, beyond one configuration);
// ring returns the process's signing key ring, which mints downstream tokens; log receives
// the stages' logs, the approval audit among them.
func pipeline(cfg *Config, table *routing.Table, now func() time.Time, kv state.KV, ring func() *auth.KeyRing, log *slog.Logger) gateway.Handler {
	return gateway.Chain(routing.Dispatch,
		// deadline: always on — refuses a call with less than ε left, then bounds its context
		// by the call's absolute deadline so no stage below can wait past it.
		resilience.Deadline(cfg.Deadline, now),
		// route: method → target, or METHOD_NOT_FOUND.
		table.Route,
		// policy: zone → rule → scopes → condition (auth/policy); refuses with 4002
		// (missing scopes) or 4000, and records the decision — approval needed or not —
		// in the context for the approval stage.
		cfg.policyChainStage(),
		// approval: a call whose decision needs approval waits, held in the state store,
		// until an operator approves it (it runs), denies it or it expires (4003); in the
		// chain whenever the policy stage is.
		cfg.approvalChainStage(kv, now, log),
		// hop token: the credential the target sends its backend — a token minted for this
		// hop (caller's scopes ∩ the rule's, aud = the target, lifetime ≤ the deadline), the
		// caller's own (passthrough) or none, as the target's downstream_token says.
		hopTokens(ring),
	)
}
