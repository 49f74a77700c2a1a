package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

var (
	brkUnavailable = gateway.NewError(schemas.CodeUnavailable).With("backend", "calc")
	brkBadParams   = gateway.NewError(schemas.CodeInvalidParams)
	brkDeadline    = gateway.ErrDeadline(gateway.LayerBackend)
)

// TestJudge is the table of what counts against a backend.
func TestJudge(t *testing.T) {
	live := context.Background()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	wire := func(code schemas.Code) error { return gateway.WireError(code, "from the backend", nil) }
	const budget = time.Second
	tests := []struct {
		name     string
		ctx      context.Context //nolint:containedctx // the call's context is an input of the table
		err      error
		sentWith time.Duration
		want     resilience.Verdict
	}{
		{"success", live, nil, budget, resilience.VerdictHealthy},
		{"success after the caller left", gone, nil, budget, resilience.VerdictIgnored},
		{"unavailable, made by the gateway", live, brkUnavailable, budget, resilience.VerdictFaulty},
		{"unavailable, sent by the backend", live, wire(schemas.CodeUnavailable), budget, resilience.VerdictFaulty},
		{"unavailable, not sent", live, brkUnavailable.NotSent(), budget, resilience.VerdictFaulty},
		{"dependency failed", live, gateway.NewError(schemas.CodeDependencyFailed), budget, resilience.VerdictFaulty},
		{"internal error from the backend", live, wire(schemas.CodeInternal), budget, resilience.VerdictFaulty},
		{"internal error reading the backend's answer", live, gateway.NewError(schemas.CodeInternal), budget, resilience.VerdictFaulty},
		{"an error that is not coded is internal", live, errors.New("boom"), budget, resilience.VerdictFaulty},
		{"deadline, sent with the budget", live, brkDeadline, budget, resilience.VerdictFaulty},
		{"deadline, sent with more", live, brkDeadline, time.Minute, resilience.VerdictFaulty},
		{"deadline, sent with less: the caller's choice", live, brkDeadline, budget - time.Nanosecond, resilience.VerdictIgnored},
		{"context deadline, sent with the budget", live, context.DeadlineExceeded, budget, resilience.VerdictFaulty},
		{"cancelled", live, gateway.NewError(schemas.CodeCancelled), budget, resilience.VerdictIgnored},
		{"unavailable after the caller left", gone, brkUnavailable, budget, resilience.VerdictIgnored},
		{"context cancelled", live, context.Canceled, budget, resilience.VerdictIgnored},
		{"invalid params from the backend: it is alive", live, wire(schemas.CodeInvalidParams), budget, resilience.VerdictHealthy},
		{"invalid params made before sending", live, brkBadParams, budget, resilience.VerdictIgnored},
		{"method not found", live, gateway.NewError(schemas.CodeMethodNotFound), budget, resilience.VerdictIgnored},
		{"missing scope from the backend", live, wire(schemas.CodeInsufficientScope), budget, resilience.VerdictHealthy},
		{"authentication", live, gateway.NewError(schemas.CodeAuthentication), budget, resilience.VerdictIgnored},
		{"rate limited by the backend", live, wire(schemas.CodeRateLimited), budget, resilience.VerdictHealthy},
		{"overloaded before sending", live, gateway.NewError(schemas.CodeOverloaded), budget, resilience.VerdictIgnored},
		{"a tool reporting failure", live, gateway.NewError(schemas.CodeToolFailed), budget, resilience.VerdictIgnored},
		{"circuit open below", live, gateway.NewError(schemas.CodeCircuitOpen), budget, resilience.VerdictIgnored},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resilience.Judge(tt.ctx, tt.err, tt.sentWith, budget); got != tt.want {
				t.Errorf("Judge = %v, want %v", got, tt.want)
			}
		})
	}
}

// breakerTarget is a handler whose next outcome the test sets; it counts its calls, and
// may hold each call until released.
type breakerTarget struct {
	mu    sync.Mutex
	err   error
	calls int
	hold  chan struct{} // when not nil, each call waits for a value
}

func (b *breakerTarget) fail(err error) {
	b.mu.Lock()
	b.err = err
	b.mu.Unlock()
}

func (b *breakerTarget) holding(hold chan struct{}) {
	b.mu.Lock()
	b.hold = hold
	b.mu.Unlock()
}

func (b *breakerTarget) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

func (b *breakerTarget) invoke(ctx context.Context, _ *gateway.Call) (*gateway.Result, error) {
	b.mu.Lock()
	b.calls++
	err, hold := b.err, b.hold
	b.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, gateway.AsError(ctx.Err())
		}
	}
	if err != nil {
		return nil, err
	}
	return gateway.NewResult([]byte(`"ok"`)), nil
}

// brkSettings open after 4 judged calls of which half failed, within 1s; stay open 2s;
// probe with 2 calls.
var brkSettings = resilience.BreakerSettings{FailureRatio: 0.5, MinRequests: 4, Window: time.Second,
	OpenDuration: 2 * time.Second, HalfOpenProbes: 2, TimeoutBudget: time.Second}

func newBreakerStage(s resilience.BreakerSettings, tgt *breakerTarget) (*resilience.Breakers, gateway.Handler) {
	b := resilience.NewBreakers(&resilience.BreakersConfig{Default: s})
	backend := func(c *gateway.Call) string { return c.Method }
	return b, gateway.Chain(tgt.invoke, b.Middleware(backend))
}

func callBackend(h gateway.Handler, backend string) error {
	_, err := h(context.Background(), &gateway.Call{Method: backend})
	return err
}

// wantRefused checks that err is CIRCUIT_OPEN for state with retry_after_ms = ms.
func wantRefused(t *testing.T, err error, state string, ms int64) {
	t.Helper()
	e := gateway.AsError(err)
	if e == nil || e.Code() != schemas.CodeCircuitOpen {
		t.Fatalf("got %v, want CIRCUIT_OPEN", err)
	}
	d := e.Data()
	if d["state"] != state || d["retry_after_ms"] != ms || d["backend"] != "calc" || d["recovery_hint"] != "RETRY_WITH_BACKOFF" {
		t.Fatalf("data %v, want state %s, retry_after_ms %d", d, state, ms)
	}
}

func wantBreakerState(t *testing.T, b *resilience.Breakers, want resilience.BreakerState) {
	t.Helper()
	for _, s := range b.States() {
		if s.Backend == want.Backend {
			if s != want {
				t.Fatalf("state %+v, want %+v", s, want)
			}
			return
		}
	}
	t.Fatalf("no breaker for %s in %+v", want.Backend, b.States())
}

// TestBreakerStateMachine walks one breaker through closed → open → half-open → closed,
// and half-open → open again on a failed probe.
func TestBreakerStateMachine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tgt := &breakerTarget{}
		b, h := newBreakerStage(brkSettings, tgt)

		// Closed: 1 success and 2 faults are 3 judged calls, under min_requests; calls the
		// gateway refused before sending are not judged at all.
		_ = callBackend(h, "calc")
		tgt.fail(brkUnavailable)
		_ = callBackend(h, "calc")
		_ = callBackend(h, "calc")
		tgt.fail(brkBadParams)
		for range 5 {
			_ = callBackend(h, "calc")
		}
		wantBreakerState(t, b, resilience.BreakerState{Backend: "calc", State: resilience.BreakerClosed})

		// The 4th judged call is a fault: 3 of 4 ≥ 0.5 opens the breaker.
		tgt.fail(brkUnavailable)
		if err := callBackend(h, "calc"); !errors.Is(err, brkUnavailable) {
			t.Fatalf("the tripping call: %v", err)
		}
		wantBreakerState(t, b, resilience.BreakerState{Backend: "calc", State: resilience.BreakerOpen, RetryAfterMs: 2000})

		// Open: calls fail fast without reaching the backend, told when to come back.
		calls := tgt.count()
		wantRefused(t, callBackend(h, "calc"), resilience.BreakerOpen, 2000)
		time.Sleep(1500 * time.Millisecond)
		wantRefused(t, callBackend(h, "calc"), resilience.BreakerOpen, 500)
		if tgt.count() != calls {
			t.Fatalf("an open breaker let %d calls through", tgt.count()-calls)
		}
		// Another backend has its own breaker.
		tgt.fail(nil)
		if err := callBackend(h, "other"); err != nil {
			t.Fatalf("another backend: %v", err)
		}

		// Half-open once open_duration has passed: two probes run at once, a third is
		// refused.
		time.Sleep(500*time.Millisecond + time.Millisecond)
		wantBreakerState(t, b, resilience.BreakerState{Backend: "calc", State: resilience.BreakerHalfOpen})
		hold := make(chan struct{})
		tgt.holding(hold)
		probes := make(chan error, 2)
		for range 2 {
			go func() { probes <- callBackend(h, "calc") }()
		}
		synctest.Wait()
		wantRefused(t, callBackend(h, "calc"), resilience.BreakerHalfOpen, 2000)
		hold <- struct{}{}
		hold <- struct{}{}
		for range 2 {
			if err := <-probes; err != nil {
				t.Fatalf("probe: %v", err)
			}
		}
		tgt.holding(nil)
		wantBreakerState(t, b, resilience.BreakerState{Backend: "calc", State: resilience.BreakerClosed})
		if err := callBackend(h, "calc"); err != nil {
			t.Fatalf("closed again: %v", err)
		}

		// Trip it again; a probe that fails opens it for a whole open_duration more.
		tgt.fail(brkUnavailable)
		for range 4 {
			_ = callBackend(h, "calc")
		}
		wantRefused(t, callBackend(h, "calc"), resilience.BreakerOpen, 2000)
		time.Sleep(2*time.Second + time.Millisecond)
		if err := callBackend(h, "calc"); !errors.Is(err, brkUnavailable) {
			t.Fatalf("the failing probe: %v", err)
		}
		wantRefused(t, callBackend(h, "calc"), resilience.BreakerOpen, 2000)
	})
}

// TestBreakerThresholds checks min_requests and failure_ratio at their edges, and that
// faults older than the window are forgotten.
func TestBreakerThresholds(t *testing.T) {
	tests := []struct {
		name        string
		faults      int
		healthy     int
		slide       time.Duration // pause between the healthy calls and the faults
		wantRefused bool
	}{
		{"min_requests - 1 faults", 3, 0, 0, false},
		{"min_requests faults", 4, 0, 0, true},
		{"ratio exactly 0.5", 2, 2, 0, true},
		{"ratio just under 0.5", 2, 3, 0, false},
		{"healthy calls outside the window do not dilute", 4, 10, 1100 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tgt := &breakerTarget{}
				b, h := newBreakerStage(brkSettings, tgt)
				for range tt.healthy {
					_ = callBackend(h, "calc")
				}
				time.Sleep(tt.slide)
				tgt.fail(brkUnavailable)
				// The last fault is the one the breaker decides on.
				for range tt.faults {
					_ = callBackend(h, "calc")
				}
				want := resilience.BreakerClosed
				if tt.wantRefused {
					want = resilience.BreakerOpen
				}
				if got := b.States()[0].State; got != want {
					t.Fatalf("state %s, want %s", got, want)
				}
			})
		})
	}
	t.Run("the window slides rather than resets", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tgt := &breakerTarget{}
			b, h := newBreakerStage(brkSettings, tgt)
			_ = callBackend(h, "calc") // t = 0: the breaker is made
			time.Sleep(600 * time.Millisecond)
			tgt.fail(brkUnavailable)
			_ = callBackend(h, "calc")
			_ = callBackend(h, "calc")
			// At 1.2s a window reset every second would have dropped the faults of 0.6s.
			time.Sleep(600 * time.Millisecond)
			_ = callBackend(h, "calc")
			_ = callBackend(h, "calc")
			if got := b.States()[0].State; got != resilience.BreakerOpen {
				t.Fatalf("state %s: 4 faults within the last second did not open it", got)
			}
		})
	})
	t.Run("faults older than the window are forgotten", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tgt := &breakerTarget{err: brkUnavailable}
			b, h := newBreakerStage(brkSettings, tgt)
			for range 3 {
				_ = callBackend(h, "calc")
			}
			time.Sleep(1100 * time.Millisecond)
			_ = callBackend(h, "calc")
			if got := b.States()[0].State; got != resilience.BreakerClosed {
				t.Fatalf("state %s: faults from before the window counted", got)
			}
		})
	})
}

// TestBreakerProbePanics: a probe whose handler panics frees its slot and counts as a
// fault, so the breaker cannot stay half-open forever.
func TestBreakerProbePanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := brkSettings
		s.HalfOpenProbes = 1
		s.MinRequests = 1
		b := resilience.NewBreakers(&resilience.BreakersConfig{Default: s})
		panics := true
		h := gateway.Chain(func(context.Context, *gateway.Call) (*gateway.Result, error) {
			if panics {
				panic("backend code went wrong")
			}
			return nil, brkUnavailable
		}, b.Middleware(func(*gateway.Call) string { return "calc" }))
		call := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return callBackend(h, "calc")
		}
		if err := call(); err == nil || gateway.AsError(err).Code() == schemas.CodeCircuitOpen {
			t.Fatalf("first call: %v", err)
		}
		wantBreakerState(t, b, resilience.BreakerState{Backend: "calc", State: resilience.BreakerOpen, RetryAfterMs: 2000})
		time.Sleep(2*time.Second + time.Millisecond)
		_ = call() // the probe panics
		wantBreakerState(t, b, resilience.BreakerState{Backend: "calc", State: resilience.BreakerOpen, RetryAfterMs: 2000})
	})
}

// TestBreakerPassesCallsWithoutBackend: a call that reaches no backend has no breaker.
func TestBreakerPassesCallsWithoutBackend(t *testing.T) {
	tgt := &breakerTarget{err: brkUnavailable}
	s := brkSettings
	s.MinRequests = 1
	b := resilience.NewBreakers(&resilience.BreakersConfig{Default: s})
	h := gateway.Chain(tgt.invoke, b.Middleware(func(*gateway.Call) string { return "" }))
	for range 3 {
		if err := callBackend(h, "builtin"); !errors.Is(err, brkUnavailable) {
			t.Fatalf("got %v", err)
		}
	}
	if len(b.States()) != 0 || tgt.count() != 3 {
		t.Fatalf("states %v, calls %d", b.States(), tgt.count())
	}
}

// TestBreakersTripped: only open or half-open breakers are tripped; no breakers section
// (a nil Breakers) has none.
func TestBreakersTripped(t *testing.T) {
	if got := (*resilience.Breakers)(nil).Tripped(); got != nil {
		t.Errorf("nil breakers: tripped %v", got)
	}
	tgt := &breakerTarget{err: brkUnavailable}
	s := brkSettings
	s.MinRequests = 1
	b := resilience.NewBreakers(&resilience.BreakersConfig{Default: s})
	h := gateway.Chain(tgt.invoke, b.Middleware(func(c *gateway.Call) string { return c.Method }))
	if got := b.Tripped(); got != nil {
		t.Fatalf("fresh breakers: tripped %v", got)
	}
	for range 3 {
		_ = callBackend(h, "calc")
	}
	got := b.Tripped()
	if len(got) != 1 || got[0].Backend != "calc" || got[0].State != resilience.BreakerOpen {
		t.Errorf("tripped %+v, want calc open", got)
	}
}

func TestBreakersConfig(t *testing.T) {
	cfg := resilience.BreakersConfig{
		Default:  resilience.BreakerSettings{MinRequests: 50, OpenDuration: time.Second},
		Backends: map[string]resilience.BreakerSettings{"calc": {FailureRatio: 0.9, OpenDuration: 30 * time.Second}},
	}
	want := resilience.BreakerSettings{FailureRatio: 0.9, MinRequests: 50, Window: resilience.DefaultBreakerWindow,
		OpenDuration: 30 * time.Second, HalfOpenProbes: resilience.DefaultHalfOpenProbes, TimeoutBudget: resilience.DefaultTimeoutBudget}
	if got := cfg.For("calc"); got != want {
		t.Errorf("For(calc) = %+v, want %+v", got, want)
	}
	want = resilience.BreakerSettings{FailureRatio: resilience.DefaultFailureRatio, MinRequests: 50, Window: resilience.DefaultBreakerWindow,
		OpenDuration: time.Second, HalfOpenProbes: resilience.DefaultHalfOpenProbes, TimeoutBudget: resilience.DefaultTimeoutBudget}
	if got := cfg.For("other"); got != want {
		t.Errorf("For(other) = %+v, want %+v", got, want)
	}
	if errs := (resilience.BreakersConfig{}).Validate(); len(errs) != 0 {
		t.Errorf("the defaults are invalid: %v", errs)
	}
}

func TestBreakersConfigProblems(t *testing.T) {
	tests := []struct {
		name string
		s    resilience.BreakerSettings
		path string // "" when valid
	}{
		{"ratio 1", resilience.BreakerSettings{FailureRatio: 1}, ""},
		{"ratio above 1", resilience.BreakerSettings{FailureRatio: 1.01}, "failure_ratio"},
		{"ratio negative", resilience.BreakerSettings{FailureRatio: -0.5}, "failure_ratio"},
		{"min_requests at most", resilience.BreakerSettings{MinRequests: resilience.MaxMinRequests}, ""},
		{"min_requests past most", resilience.BreakerSettings{MinRequests: resilience.MaxMinRequests + 1}, "min_requests"},
		{"window at least", resilience.BreakerSettings{Window: resilience.MinBreakerWindow}, ""},
		{"window too short", resilience.BreakerSettings{Window: resilience.MinBreakerWindow - 1}, "window"},
		{"window too long", resilience.BreakerSettings{Window: resilience.MaxBreakerDuration + 1}, "window"},
		{"open_duration 1ms", resilience.BreakerSettings{OpenDuration: time.Millisecond}, ""},
		{"open_duration under 1ms", resilience.BreakerSettings{OpenDuration: time.Microsecond}, "open_duration"},
		{"probes at most", resilience.BreakerSettings{HalfOpenProbes: resilience.MaxHalfOpenProbes}, ""},
		{"probes past most", resilience.BreakerSettings{HalfOpenProbes: resilience.MaxHalfOpenProbes + 1}, "half_open_probes"},
		{"probes negative", resilience.BreakerSettings{HalfOpenProbes: -1}, "half_open_probes"},
		{"timeout_budget negative", resilience.BreakerSettings{TimeoutBudget: -1}, "timeout_budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := resilience.BreakersConfig{Backends: map[string]resilience.BreakerSettings{"calc.v1": tt.s}}.Validate()
			if tt.path == "" {
				if len(errs) != 0 {
					t.Fatalf("valid settings refused: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Path != `backends["calc.v1"].`+tt.path {
				t.Fatalf("got %v, want one problem at %s", errs, tt.path)
			}
		})
	}
	errs := resilience.BreakersConfig{Default: resilience.BreakerSettings{MinRequests: -1}}.Validate()
	if len(errs) != 1 || errs[0].Path != "default.min_requests" {
		t.Fatalf("default: %v", errs)
	}
}

// BenchmarkBreakerStage measures a call through the breaker stage beside the same call
// without it; compare the two in one run.
func BenchmarkBreakerStage(b *testing.B) {
	ok := func(context.Context, *gateway.Call) (*gateway.Result, error) { return gateway.NewResult(nil), nil }
	brs := resilience.NewBreakers(&resilience.BreakersConfig{})
	stages := map[string]gateway.Handler{
		"bare":    ok,
		"breaker": gateway.Chain(ok, brs.Middleware(func(*gateway.Call) string { return "calc" })),
	}
	for _, name := range []string{"bare", "breaker"} {
		h := stages[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			call := &gateway.Call{Method: "calc.add"}
			ctx := context.Background()
			for b.Loop() {
				_, _ = h(ctx, call)
			}
		})
	}
}
