package server

import (
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/routing"
)

// pipeline returns the handler every call of one configuration runs through. The order of
// the stages lives here and only here; a call passes them top to bottom:
//
//	deadline → route → dispatch
//
// The full order the stages take as they land is
// trace → metrics → deadline → authorize → rate limit → idempotency → admission → route →
// breaker/retry → dispatch. A stage whose config section is absent is passed as nil and is
// not in the chain. The trace id is assigned at ingress, before decoding.
func pipeline(cfg *Config, table *routing.Table, now func() time.Time) gateway.Handler {
	return gateway.Chain(routing.Dispatch,
		// deadline: always on — refuses a call with less than ε left, then bounds its context
		// by the call's absolute deadline so no stage below can wait past it.
		resilience.Deadline(cfg.Deadline, now),
		// route: method → target, or METHOD_NOT_FOUND.
		table.Route,
	)
}
