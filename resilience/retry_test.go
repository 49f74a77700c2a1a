package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// retryNotSent is the failure a retry is for: UNAVAILABLE before the request left.
var retryNotSent = brkUnavailable.Wrap(errors.New("connection refused")).NotSent()

func TestRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"unavailable, not sent", retryNotSent, true},
		{"unavailable, not sent, wrapped by a caller", fmt.Errorf("calling: %w", retryNotSent), true},
		{"unavailable, maybe sent", brkUnavailable.Wrap(errors.New("connection reset")), false},
		{"unavailable sent by the backend", gateway.WireError(schemas.CodeUnavailable, "down", nil), false},
		{"overloaded, not sent", gateway.NewError(schemas.CodeOverloaded).NotSent(), false},
		{"deadline, not sent", gateway.ErrDeadline(gateway.LayerBackend).NotSent(), false},
		{"circuit open", gateway.NewError(schemas.CodeCircuitOpen), false},
		{"the bare sentinel", gateway.ErrNotSent, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resilience.Retryable(tt.err); got != tt.want {
				t.Errorf("Retryable = %v, want %v", got, tt.want)
			}
		})
	}
}

// flakyTarget fails its first attempts with err and then succeeds; it records the
// attempts, and reads one input message per attempt when told to.
type flakyTarget struct {
	err       error
	failures  int
	attempts  int
	readInput bool
}

func (f *flakyTarget) invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	f.attempts++
	if f.readInput && call.Input != nil {
		_, _ = call.Input.Recv(ctx)
	}
	if f.attempts <= f.failures {
		return nil, f.err
	}
	return gateway.NewResult([]byte(`"ok"`)), nil
}

// taskTarget is a target whose calls start tasks: it says they must never be retried
// (gateway.Unretryable) unless retryable is set.
type taskTarget struct{ retryable bool }

var _ gateway.Unretryable = taskTarget{}

func (taskTarget) Name() string { return "tasks" }
func (taskTarget) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	return gateway.NewResult(nil), nil
}
func (t taskTarget) NotRetryable(*gateway.Call) bool { return !t.retryable }

// retryInput is an input stream of one message.
type retryInput struct{ sent bool }

func (o *retryInput) Recv(context.Context) ([]byte, error) {
	if o.sent {
		return nil, io.EOF
	}
	o.sent = true
	return []byte(`{}`), nil
}

func (*retryInput) Close() error { return nil }

const (
	retryBackoff = 20 * time.Millisecond
	retryEpsilon = 50 * time.Millisecond
)

// retryStage returns the retry stage over tgt: calls to method "builtin" reach no backend,
// every other method is its own backend, and a call is repeatable when its ctx says so.
func retryStage(tgt *flakyTarget, budget resilience.RetryBudgetConfig) gateway.Handler {
	return gateway.Chain(tgt.invoke, resilience.Retry(resilience.RetryConfig{Backoff: retryBackoff, Budget: budget},
		resilience.RetryOptions{
			BackendOf: func(c *gateway.Call) string {
				if c.Method == "builtin" {
					return ""
				}
				return c.Method
			},
			Repeatable:   func(ctx context.Context, _ *gateway.Call) bool { return ctx.Value(repeatableKey{}) != nil },
			MinRemaining: retryEpsilon,
		}))
}

type repeatableKey struct{}

// TestRetryRules turns each condition of a retry off in turn.
func TestRetryRules(t *testing.T) {
	readOnly := func(ctx context.Context) context.Context { return context.WithValue(ctx, repeatableKey{}, true) }
	type tc struct {
		name      string
		err       error
		method    string
		target    gateway.Target
		params    string
		ctx       func(context.Context) context.Context
		timeLeft  time.Duration // 0: no deadline
		input     bool
		readInput bool
		cancel    bool
		want      int // attempts
	}
	tests := []tc{
		{name: "retryable, read-only", err: retryNotSent, ctx: readOnly, want: 2},
		{name: "maybe sent", err: brkUnavailable, ctx: readOnly, want: 1},
		{name: "another code, not sent", err: gateway.NewError(schemas.CodeOverloaded).NotSent(), ctx: readOnly, want: 1},
		{name: "not repeatable, no key", err: retryNotSent, want: 1},
		{name: "not repeatable, idempotency key", err: retryNotSent, params: `{"a":1,"idempotency_key":"k-1"}`, want: 2},
		{name: "not repeatable, empty key", err: retryNotSent, params: `{"idempotency_key":""}`, want: 1},
		{name: "not repeatable, key not a string", err: retryNotSent, params: `{"idempotency_key":7}`, want: 1},
		{name: "not repeatable, key nested deeper", err: retryNotSent, params: `{"a":{"idempotency_key":"k"}}`, want: 1},
		{name: "not repeatable, key of another case", err: retryNotSent, params: `{"Idempotency_Key":"k"}`, want: 1},
		{name: "the target says not retryable", err: retryNotSent, target: taskTarget{}, ctx: readOnly, want: 1},
		{name: "the target says retryable", err: retryNotSent, target: taskTarget{retryable: true}, ctx: readOnly, want: 2},
		{name: "no backend", err: retryNotSent, method: "builtin", ctx: readOnly, want: 1},
		{name: "input not read", err: retryNotSent, ctx: readOnly, input: true, want: 2},
		{name: "input read", err: retryNotSent, ctx: readOnly, input: true, readInput: true, want: 1},
		{name: "time left just over backoff + 2ε", err: retryNotSent, ctx: readOnly, timeLeft: retryBackoff + 2*retryEpsilon + time.Nanosecond, want: 2},
		{name: "time left backoff + 2ε", err: retryNotSent, ctx: readOnly, timeLeft: retryBackoff + 2*retryEpsilon, want: 1},
		{name: "the caller left", err: retryNotSent, ctx: readOnly, cancel: true, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tgt := &flakyTarget{err: tt.err, failures: 1, readInput: tt.readInput}
				h := retryStage(tgt, resilience.RetryBudgetConfig{})
				ctx := context.Background()
				if tt.ctx != nil {
					ctx = tt.ctx(ctx)
				}
				if tt.timeLeft > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeLeft)
					defer cancel()
				}
				if tt.cancel {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					cancel()
				}
				call := &gateway.Call{Method: tt.method, Params: []byte(tt.params), Target: tt.target}
				if call.Method == "" {
					call.Method = "calc"
				}
				if tt.input {
					call.Input = &retryInput{}
				}
				res, err := h(ctx, call)
				if tgt.attempts != tt.want {
					t.Fatalf("%d attempts, want %d", tgt.attempts, tt.want)
				}
				if wantOK := tt.want == 2; wantOK != (err == nil) || wantOK != (res != nil) {
					t.Fatalf("got %v, %v", res, err)
				}
				if err != nil && !errors.Is(err, tt.err) {
					t.Fatalf("the failure returned is %v, want the target's %v", err, tt.err)
				}
			})
		})
	}
}

// TestRetryKeyCutByTheIdempotencyStage: with the idempotency stage in front, the key is no
// longer in the params the retry stage sees, but the call still carries it.
func TestRetryKeyCutByTheIdempotencyStage(t *testing.T) {
	idem, err := resilience.NewIdempotency(resilience.IdempotencyConfig{}, resilience.NewKVIdempotencyRecords(newKV(t, newClock())), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tgt := &flakyTarget{err: retryNotSent, failures: 1}
	var seen string
	h := gateway.Chain(func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
		seen = string(call.Params)
		return tgt.invoke(ctx, call)
	}, idem.Middleware(), resilience.Retry(resilience.RetryConfig{Backoff: time.Millisecond}, resilience.RetryOptions{
		BackendOf: func(*gateway.Call) string { return "calc" }, MinRemaining: retryEpsilon}))
	call := &gateway.Call{Method: "calc.set", Params: []byte(`{"v":1,"idempotency_key":"k-1"}`), Principal: gateway.Principal{Subject: "alice"}}
	if _, err := h(context.Background(), call); err != nil || tgt.attempts != 2 {
		t.Fatalf("%d attempts, %v", tgt.attempts, err)
	}
	if seen != `{"v":1}` {
		t.Fatalf("the target saw params %s: the key was not cut before the retry stage", seen)
	}
}

// TestRetryNeverTwice: a retry that fails too is the end; its failure is returned.
func TestRetryNeverTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tgt := &flakyTarget{err: retryNotSent, failures: 5}
		h := retryStage(tgt, resilience.RetryBudgetConfig{})
		_, err := h(context.WithValue(context.Background(), repeatableKey{}, true), &gateway.Call{Method: "calc"})
		if tgt.attempts != 2 || !errors.Is(err, retryNotSent) {
			t.Fatalf("%d attempts, %v", tgt.attempts, err)
		}
	})
}

// TestRetryNestedTaskCalls: a call made on a delegated task's behalf — under the context
// the task method ran with — is never retried.
func TestRetryNestedTaskCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &flakyTarget{err: retryNotSent, failures: 1}
		var h gateway.Handler
		outer := func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			if call.Method == "task.start" {
				return h(ctx, &gateway.Call{Method: "calc"}) // the task's capability call
			}
			return inner.invoke(ctx, call)
		}
		h = gateway.Chain(outer, resilience.Retry(resilience.RetryConfig{}, resilience.RetryOptions{
			BackendOf:    func(c *gateway.Call) string { return c.Method },
			Repeatable:   func(context.Context, *gateway.Call) bool { return true },
			MinRemaining: retryEpsilon,
		}))
		if _, err := h(context.Background(), &gateway.Call{Method: "task.start", Target: taskTarget{}}); !errors.Is(err, retryNotSent) || inner.attempts != 1 {
			t.Fatalf("under a task: %d attempts, %v", inner.attempts, err)
		}
		inner.attempts = 0
		if _, err := h(context.Background(), &gateway.Call{Method: "calc"}); err != nil || inner.attempts != 2 {
			t.Fatalf("outside a task: %d attempts, %v", inner.attempts, err)
		}
	})
}

// TestRetryBudgetCapsRetries: with the floor at 2 and a ratio of 0.1, a backend that fails
// every call gets 2 retries among its first 20 calls, then one more per 10 calls, and the
// window sliding on gives it back its floor.
func TestRetryBudgetCapsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tgt := &flakyTarget{err: retryNotSent, failures: 1 << 30}
		h := retryStage(tgt, resilience.RetryBudgetConfig{Ratio: 0.1, MinRetries: 2, Window: time.Second})
		ctx := context.WithValue(context.Background(), repeatableKey{}, true)
		calls := func(n int) int {
			before := tgt.attempts
			for range n {
				_, _ = h(ctx, &gateway.Call{Method: "calc"})
			}
			return tgt.attempts - before - n
		}
		if got := calls(20); got != 2 {
			t.Fatalf("%d retries in the first 20 calls, want the floor, 2", got)
		}
		if got := calls(10); got != 1 {
			t.Fatalf("%d retries in the next 10 calls, want 1 (30 calls × 0.1 = 3)", got)
		}
		if got := calls(9); got != 0 {
			t.Fatalf("%d retries in the next 9 calls, want 0 (39 × 0.1 = 3.9 → 3)", got)
		}
		if got := calls(1); got != 1 {
			t.Fatalf("%d retries at the 40th call, want 1", got)
		}
		// The other backend has its own budget.
		tgt.attempts = 0
		if _, _ = h(ctx, &gateway.Call{Method: "search"}); tgt.attempts != 2 {
			t.Fatalf("another backend: %d attempts", tgt.attempts)
		}
		time.Sleep(1500 * time.Millisecond) // the window has moved past every call so far
		if got := calls(3); got != 2 {
			t.Fatalf("%d retries once the window slid on, want 2", got)
		}
	})
}

// TestRetryBudgetSpentOnlyOnRetries: calls refused a retry for another reason — here the
// caller having left — take nothing from the budget.
func TestRetryBudgetSpentOnlyOnRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tgt := &flakyTarget{err: retryNotSent, failures: 1 << 30}
		h := retryStage(tgt, resilience.RetryBudgetConfig{Ratio: 0.1, MinRetries: 1})
		live := context.WithValue(context.Background(), repeatableKey{}, true)
		gone, cancel := context.WithCancel(live)
		cancel()
		for range 3 {
			_, _ = h(gone, &gateway.Call{Method: "calc"})
		}
		_, _ = h(live, &gateway.Call{Method: "calc"})
		if tgt.attempts != 5 {
			t.Fatalf("%d attempts, want 3 without retry and 2 for the live call", tgt.attempts)
		}
	})
}

// TestRetryEachAttemptPassesTheBreaker: the retry stage wraps the breaker, so the first
// attempt's fault counts and the retry finds the breaker it opened.
func TestRetryEachAttemptPassesTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tgt := &flakyTarget{err: retryNotSent, failures: 1}
		s := brkSettings
		s.MinRequests = 1
		backend := func(*gateway.Call) string { return "calc" }
		h := gateway.Chain(tgt.invoke,
			resilience.Retry(resilience.RetryConfig{}, resilience.RetryOptions{
				BackendOf: backend, Repeatable: func(context.Context, *gateway.Call) bool { return true }}),
			resilience.NewBreakers(&resilience.BreakersConfig{Default: s}).Middleware(backend))
		_, err := h(context.Background(), &gateway.Call{Method: "calc"})
		if e := gateway.AsError(err); e.Code() != schemas.CodeCircuitOpen || e.Data()["state"] != resilience.BreakerOpen {
			t.Fatalf("the retry got %v, want CIRCUIT_OPEN from the breaker the first attempt opened", err)
		}
		if tgt.attempts != 1 {
			t.Fatalf("%d attempts reached the target", tgt.attempts)
		}
	})
}

func TestRetryConfigProblems(t *testing.T) {
	tests := []struct {
		name string
		cfg  resilience.RetryConfig
		path string // "" when valid
	}{
		{"defaults", resilience.RetryConfig{}, ""},
		{"backoff at most", resilience.RetryConfig{Backoff: resilience.MaxRetryBackoff}, ""},
		{"backoff past most", resilience.RetryConfig{Backoff: resilience.MaxRetryBackoff + 1}, "backoff"},
		{"backoff negative", resilience.RetryConfig{Backoff: -1}, "backoff"},
		{"ratio 1", resilience.RetryConfig{Budget: resilience.RetryBudgetConfig{Ratio: 1}}, ""},
		{"ratio above 1", resilience.RetryConfig{Budget: resilience.RetryBudgetConfig{Ratio: 1.5}}, "budget.ratio"},
		{"min_retries at most", resilience.RetryConfig{Budget: resilience.RetryBudgetConfig{MinRetries: resilience.MaxMinRetries}}, ""},
		{"min_retries past most", resilience.RetryConfig{Budget: resilience.RetryBudgetConfig{MinRetries: resilience.MaxMinRetries + 1}}, "budget.min_retries"},
		{"window at least", resilience.RetryConfig{Budget: resilience.RetryBudgetConfig{Window: resilience.MinRetryWindow}}, ""},
		{"window too short", resilience.RetryConfig{Budget: resilience.RetryBudgetConfig{Window: resilience.MinRetryWindow - 1}}, "budget.window"},
		{"window too long", resilience.RetryConfig{Budget: resilience.RetryBudgetConfig{Window: resilience.MaxRetryWindow + 1}}, "budget.window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := tt.cfg.Validate()
			if tt.path == "" {
				if len(errs) != 0 {
					t.Fatalf("valid settings refused: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Path != tt.path {
				t.Fatalf("got %v, want one problem at %s", errs, tt.path)
			}
		})
	}
}

// BenchmarkRetryStage measures a successful call through the retry stage beside the same
// call without it; compare the two in one run.
func BenchmarkRetryStage(b *testing.B) {
	ok := func(context.Context, *gateway.Call) (*gateway.Result, error) { return gateway.NewResult(nil), nil }
	stages := map[string]gateway.Handler{
		"bare": ok,
		"retry": gateway.Chain(ok, resilience.Retry(resilience.RetryConfig{}, resilience.RetryOptions{
			BackendOf: func(*gateway.Call) string { return "calc" }})),
	}
	for _, name := range []string{"bare", "retry"} {
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
