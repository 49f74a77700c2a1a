package resilience

import (
	"log/slog"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// AdmissionControl is the admission stage of one configuration (Admission) with read-only
// views of its state, which the server's metrics read at scrape time.
type AdmissionControl struct{ a *admission }

// AdmissionDeps are what the admission stage needs beyond its section.
type AdmissionDeps struct {
	// BackendOf names the backend whose queue a routed call waits in; nil: the target
	// names it (gateway.BackendOf). A call it names "" passes the global limit only.
	BackendOf BackendOf
	// Now is the clock.
	Now func() time.Time
	// Log receives at most one summary of the calls shed per interval while the gateway
	// sheds.
	Log *slog.Logger
	// OnWait, when set, is told the time each admitted call waited for its backend's place
	// (0 for a call that found one at once), with the backend's name; it must not block.
	OnWait func(backend string, d time.Duration)
}

// NewAdmission returns the admission control of cfg (see Admission), nil when cfg is nil:
// its Middleware is then nil too, and the stage is out of the chain.
func NewAdmission(cfg *AdmissionConfig, deps AdmissionDeps) *AdmissionControl {
	if cfg == nil {
		return nil
	}
	if deps.BackendOf == nil {
		deps.BackendOf = gateway.BackendOf
	}
	a := newAdmission(cfg.WithDefaults(), deps.BackendOf, deps.Now, deps.Log)
	a.onWait = deps.OnWait
	return &AdmissionControl{a: a}
}

// Middleware returns the admission stage; nil for a nil c.
func (c *AdmissionControl) Middleware() gateway.Middleware {
	if c == nil {
		return nil
	}
	return c.a.wrap
}

// QueueDepths returns the calls queued (held or waiting for their turn) by backend, for
// every backend that has had a call.
func (c *AdmissionControl) QueueDepths() map[string]int {
	out := make(map[string]int)
	c.a.backends.Range(func(name, b any) bool {
		_, queued := b.(*backpressure).load() //nolint:forcetypeassert // only *backpressure is stored
		out[name.(string)] = queued           //nolint:forcetypeassert // keys are backend names
		return true
	})
	return out
}

// Limit returns the global adaptive concurrency limit, and false when it is off.
func (c *AdmissionControl) Limit() (int, bool) {
	if c.a.global == nil {
		return 0, false
	}
	return c.a.global.Limit(), true
}
