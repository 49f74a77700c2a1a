package resilience

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// AdmissionConfig is the admission section of the configuration file: admission control
// and backpressure. Present, every call passes the global adaptive limit (Global; calls of
// the operator zone bypass it), then the concurrency limit and queue of the backend it
// reaches (Default, overridden per backend name in Backends). Absent, the stage is not in
// the chain.
type AdmissionConfig struct {
	// Global is the gateway-wide adaptive concurrency limit.
	Global AdaptiveConfig `yaml:"global" json:"global,omitzero"`
	// Default are the limits of every backend that Backends does not name.
	Default TargetLimits `yaml:"default" json:"default,omitzero"`
	// Backends overrides limits per backend name, as the server's BackendOf names backends
	// (the breakers' names: a gRPC backend's name, "mcp/NAME" for an MCP server); unset
	// fields are Default's.
	Backends map[string]TargetLimits `yaml:"backends" json:"backends,omitempty"`
}

// WithDefaults returns c with every unset limit filled: Default's from the built-in
// defaults, each backend's from Default, Global's from its defaults.
func (c AdmissionConfig) WithDefaults() AdmissionConfig {
	c.Global = c.Global.WithDefaults()
	c.Default = c.Default.over(builtinTargetLimits)
	if c.Backends != nil {
		backends := make(map[string]TargetLimits, len(c.Backends))
		for name, l := range c.Backends {
			backends[name] = l.over(c.Default)
		}
		c.Backends = backends
	}
	return c
}

// Limits returns the limits of the backend named name.
func (c AdmissionConfig) Limits(name string) TargetLimits {
	if l, ok := c.Backends[name]; ok {
		return l
	}
	return c.Default
}

func problemAt(path, format string, args ...any) ConfigError {
	return ConfigError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Validate returns every problem of c, which should have its defaults applied, at paths
// inside the section ("backends.calculator.max_wait"); the relations the schema cannot
// check are checked here.
func (c AdmissionConfig) Validate() []ConfigError {
	var out []ConfigError
	under := func(prefix string, ps []ConfigError) {
		for _, p := range ps {
			out = append(out, ConfigError{Path: prefix + "." + p.Path, Msg: p.Msg})
		}
	}
	under("global", c.Global.problems())
	under("default", c.Default.problems())
	names := make([]string, 0, len(c.Backends))
	for name := range c.Backends {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == "" {
			out = append(out, problemAt("backends", "a backend name is empty"))
			continue
		}
		under("backends."+name, c.Backends[name].problems())
	}
	return out
}

// Reasons an admission refusal gives in error.data.reason.
const (
	// reasonGlobalLimit: the global adaptive limit was reached.
	reasonGlobalLimit = "global_limit"
	// reasonQueueFull: the backend's queue was 2·Q_max long.
	reasonQueueFull = "queue_full"
	// reasonDeadlineTooShort: the call's deadline left no room for its throttle hold and
	// the backend's service time.
	reasonDeadlineTooShort = "deadline_too_short"
	// reasonQueueTimeout: the call waited max_wait without getting its turn.
	reasonQueueTimeout = "queue_timeout"
)

// refusals are the OVERLOADED errors of admission refusals by reason, without
// retry_after_ms: built once, so a refusal copies its data once.
var refusals = func() map[string]*gateway.Error {
	m := map[string]*gateway.Error{}
	for _, r := range []string{reasonGlobalLimit, reasonQueueFull, reasonDeadlineTooShort, reasonQueueTimeout} {
		m[r] = gateway.NewError(schemas.CodeOverloaded).With("reason", r).With("recovery_hint", "RETRY_WITH_BACKOFF")
	}
	return m
}()

// overloadedError returns the OVERLOADED error of an admission refusal.
func overloadedError(reason string, retryAfter time.Duration) *gateway.Error {
	return refusals[reason].With("retry_after_ms", ceilMillis(retryAfter))
}

// Admission returns the admission stage of cfg, or nil (no stage) when cfg is nil. It runs
// after routing: backendOf names the backend whose queue a routed call waits in (nil: the
// target names it, gateway.BackendOf); a call it names "" reaches no backend outside the
// process and passes the global limit only. log receives at most one summary of the calls
// shed per shedLogInterval while the gateway sheds.
//
// Calls of the operator zone (gateway.ZoneOperator) bypass the global limit, so an operator
// can still reach the gateway when it sheds; they still wait their backend's turn, since
// the backend's capacity is the same for them. Health and admin traffic does not pass the
// pipeline at all.
func Admission(cfg *AdmissionConfig, backendOf BackendOf, now func() time.Time, log *slog.Logger) gateway.Middleware {
	if cfg == nil {
		return nil
	}
	if backendOf == nil {
		backendOf = gateway.BackendOf
	}
	a := newAdmission(cfg.WithDefaults(), backendOf, now, log)
	return a.wrap
}

// admission is the admission stage of one configuration.
type admission struct {
	cfg       AdmissionConfig
	global    *AdaptiveLimiter // nil when the global limit is off
	backendOf BackendOf
	now       func() time.Time
	backends  sync.Map // backend name → *backpressure
	shed      shedLog
	onWait    func(backend string, d time.Duration) // nil: no one is told (NewAdmission)
}

func newAdmission(cfg AdmissionConfig, backendOf BackendOf, now func() time.Time, log *slog.Logger) *admission {
	a := &admission{cfg: cfg, backendOf: backendOf, now: now, shed: shedLog{log: log, now: now}}
	if cfg.Global.On() {
		a.global = NewAdaptiveLimiter(cfg.Global)
	}
	return a
}

func (a *admission) wrap(next gateway.Handler) gateway.Handler {
	return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
		t, err := a.admit(ctx, call)
		if err != nil {
			return nil, err
		}
		returned := false
		defer func() {
			if !returned { // next panicked: the places are given back all the same
				t.releaseGlobal(false)
				t.slot.release(false)
			}
		}()
		res, err := next(ctx, call)
		returned = true
		if err == nil && res.Stream != nil {
			// A streamed result leaves the global limit once it starts (the limit judges the
			// latency to a result, and a long stream must not hold a place of it), but keeps
			// its backend's place, which the stream goes on using, until the stream ends.
			t.releaseGlobal(false)
			slot := t.slot
			res.Stream = gateway.AfterClose(res.Stream, func() { slot.release(false) })
			return res, nil
		}
		sample := isLatencySignal(err)
		t.releaseGlobal(sample)
		t.slot.release(sample)
		return res, err
	}
}

// admit takes the call's places: under the global limit, then in its backend's queue. On
// error the ticket holds no place.
func (a *admission) admit(ctx context.Context, call *gateway.Call) (admissionTicket, error) {
	t := admissionTicket{a: a, start: a.now()}
	if a.global != nil && call.Zone != gateway.ZoneOperator {
		if !a.global.TryAcquire() {
			return t, a.shed.refused(overloadedError(reasonGlobalLimit, a.global.RetryAfter()), a.global)
		}
		t.global = true
	}
	name := a.backendOf(call)
	if name == "" {
		return t, nil
	}
	s, err := a.backend(name).acquire(ctx)
	if err != nil {
		t.releaseGlobal(false)
		if ge := gateway.AsError(err); ge.Code() == schemas.CodeOverloaded {
			return t, a.shed.refused(ge, a.global)
		}
		return t, err
	}
	t.slot = s
	if a.onWait != nil {
		a.onWait(name, a.now().Sub(t.start))
	}
	return t, nil
}

// backend returns the queue of the backend named name, made on first use. Names come from
// the configuration and the targets, never from callers, so the queues are bounded.
func (a *admission) backend(name string) *backpressure {
	if b, ok := a.backends.Load(name); ok {
		return b.(*backpressure)
	}
	b, _ := a.backends.LoadOrStore(name, newBackpressure(a.cfg.Limits(name), a.now))
	return b.(*backpressure)
}

// isLatencySignal says whether a call's latency tells the global limit about queueing: a
// completed call's does, and so does one that ran out of its deadline; calls that failed
// otherwise (often fast) do not.
func isLatencySignal(err error) bool {
	return err == nil || gateway.AsError(err).Code() == schemas.CodeDeadlineExceeded
}

// admissionTicket is what an admitted call holds: its place under the global limit and in
// its backend's queue (each when it took one). Each is given back once.
type admissionTicket struct {
	a      *admission
	start  time.Time
	global bool
	slot   queueSlot
}

// releaseGlobal gives the place under the global limit back; sample says whether the
// call's latency is a signal for the limit.
func (t admissionTicket) releaseGlobal(sample bool) {
	if t.global {
		end := t.a.now()
		t.a.global.Release(end, end.Sub(t.start), sample)
	}
}

// shedLogInterval is the least time between two summaries of shed calls in the log.
const shedLogInterval = 10 * time.Second

// shedLog counts refused calls by reason and logs a summary at most once per
// shedLogInterval, so an overload shows in the log without a line per call.
type shedLog struct {
	log *slog.Logger
	now func() time.Time

	mu      sync.Mutex
	counts  map[string]int
	since   time.Time
	written time.Time
}

// refused counts err, logs the summary when it is due and returns err.
func (s *shedLog) refused(err *gateway.Error, global *AdaptiveLimiter) *gateway.Error {
	if s.log == nil {
		return err
	}
	reason, _ := err.Data()["reason"].(string)
	now := s.now()
	s.mu.Lock()
	if s.counts == nil {
		s.counts, s.since = map[string]int{}, now
	}
	s.counts[reason]++
	if now.Sub(s.written) < shedLogInterval {
		s.mu.Unlock()
		return err
	}
	counts, since := s.counts, s.since
	s.counts, s.since, s.written = map[string]int{}, now, now
	s.mu.Unlock()
	attrs := []any{"since", since.UTC().Format(time.RFC3339Nano)}
	for _, r := range []string{reasonGlobalLimit, reasonQueueFull, reasonDeadlineTooShort, reasonQueueTimeout} {
		attrs = append(attrs, r, counts[r])
	}
	if global != nil {
		attrs = append(attrs, "adaptive_limit", global.Limit(), "adaptive_inflight", global.Inflight())
	}
	s.log.Warn("admission: shedding calls (OVERLOADED)", attrs...)
	return err
}
