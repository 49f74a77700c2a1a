package resilience

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// RetryConfig is the retries section. Absent, the retry stage is not in the chain and no
// call is retried; present, even empty, the rules below apply with their defaults.
//
// A call is retried at most once, and only when all of these hold:
//   - it failed with UNAVAILABLE before its request reached the backend (the target marked
//     the error gateway.ErrNotSent): it has not run anywhere;
//   - its policy mutation class is READ_ONLY or IDEMPOTENT_WRITE, or it carries
//     params.idempotency_key;
//   - its target does not call it unretryable (gateway.Unretryable: a delegated NEKTE
//     task, a task method), nor is it made on behalf of such a call;
//   - it has not read (or closed) its input stream;
//   - more than 2ε (deadline.min_remaining) is left of its deadline after the back-off;
//   - its backend's retry budget has room.
type RetryConfig struct {
	// Backoff is the pause before the retry, drawn between half of it and all of it
	// (default 50ms).
	Backoff time.Duration `yaml:"backoff" json:"backoff,omitempty"`
	// Budget caps the retries per backend.
	Budget RetryBudgetConfig `yaml:"budget" json:"budget,omitzero"`
}

// RetryBudgetConfig caps a backend's retries over a sliding window: at most Ratio of the
// calls it was sent in the window, rounded down, and never fewer than MinRetries. Once
// spent, failures are returned as they are until the window slides on, so that retries
// cannot multiply the load on a backend that is failing.
type RetryBudgetConfig struct {
	// Ratio is the share of calls that may be retried, in (0, 1] (default 0.1).
	Ratio float64 `yaml:"ratio" json:"ratio,omitempty"`
	// MinRetries is how many retries the window always allows, however few calls it saw
	// (default 3).
	MinRetries int `yaml:"min_retries" json:"min_retries,omitempty"`
	// Window is the sliding window (default 10s); it slides in steps of a tenth of itself.
	Window time.Duration `yaml:"window" json:"window,omitempty"`
}

// Defaults and bounds of the retries section.
const (
	DefaultRetryBackoff     = 50 * time.Millisecond
	DefaultRetryRatio       = 0.1
	DefaultMinRetries       = 3
	DefaultRetryWindow      = 10 * time.Second
	MaxRetryBackoff         = 10 * time.Second
	MaxMinRetries           = 10_000
	MinRetryWindow          = 100 * time.Millisecond
	MaxRetryWindow          = time.Hour
	retryBudgetBucketsCount = 10
)

// WithDefaults returns c with zero fields set to their defaults.
func (c RetryConfig) WithDefaults() RetryConfig {
	zeroTo(&c.Backoff, DefaultRetryBackoff)
	zeroTo(&c.Budget.Ratio, DefaultRetryRatio)
	zeroTo(&c.Budget.MinRetries, DefaultMinRetries)
	zeroTo(&c.Budget.Window, DefaultRetryWindow)
	return c
}

// Validate reports every problem of c with its defaults applied; paths are relative to
// the section.
func (c RetryConfig) Validate() []ConfigError {
	c = c.WithDefaults()
	var errs []ConfigError
	bad := func(path, format string, args ...any) {
		errs = append(errs, ConfigError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if c.Backoff < 0 || c.Backoff > MaxRetryBackoff {
		bad("backoff", "backoff is %s: it must be between 0 and %s", c.Backoff, MaxRetryBackoff)
	}
	if !(c.Budget.Ratio > 0 && c.Budget.Ratio <= 1) {
		bad("budget.ratio", "ratio is %g: it must be more than 0 and at most 1", c.Budget.Ratio)
	}
	if c.Budget.MinRetries < 1 || c.Budget.MinRetries > MaxMinRetries {
		bad("budget.min_retries", "min_retries is %d: it must be between 1 and %d", c.Budget.MinRetries, MaxMinRetries)
	}
	if c.Budget.Window < MinRetryWindow || c.Budget.Window > MaxRetryWindow {
		bad("budget.window", "window is %s: it must be between %s and %s", c.Budget.Window, MinRetryWindow, MaxRetryWindow)
	}
	return errs
}

// RetryOptions are what the retry stage needs beyond its section.
type RetryOptions struct {
	// BackendOf names the backend a call reaches; a call reaching none is never retried.
	// Nil: the target names it (gateway.BackendOf).
	BackendOf BackendOf
	// Repeatable reports whether the call's mutation class (READ_ONLY, IDEMPOTENT_WRITE)
	// makes running it twice harmless. The server passes one that reads the policy's
	// decision (resilience may not import auth); nil: no call's class does, and only an
	// idempotency key makes one retryable.
	Repeatable func(ctx context.Context, call *gateway.Call) bool
	// MinRemaining is ε (deadline.min_remaining): a retry needs more than 2ε left after
	// its back-off.
	MinRemaining time.Duration
}

// NewRetryStage returns the retry stage of cfg (Retry): nil, out of the chain, when cfg
// is nil.
func NewRetryStage(cfg *RetryConfig, opts RetryOptions) gateway.Middleware {
	if cfg == nil {
		return nil
	}
	return Retry(*cfg, opts)
}

// Retry returns the retry stage of cfg (see RetryConfig for the rules). It sits above the
// breaker stage, so each attempt passes the backend's breaker and is judged by it: a retry
// that finds the breaker open fails at once with CIRCUIT_OPEN. The failure of the last
// attempt is what the caller gets.
func Retry(cfg RetryConfig, opts RetryOptions) gateway.Middleware {
	if opts.BackendOf == nil {
		opts.BackendOf = gateway.BackendOf
	}
	r := &retrier{cfg: cfg.WithDefaults(), opts: opts}
	return r.wrap
}

// retrier is the retry stage of one configuration.
type retrier struct {
	cfg     RetryConfig
	opts    RetryOptions
	budgets sync.Map // backend name → *retryBudget
}

func (r *retrier) wrap(next gateway.Handler) gateway.Handler {
	return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
		if notRetryable(call) {
			// A task outlives the call and runs on its context's values: whatever it
			// calls on the task's behalf is never retried either.
			return next(context.WithValue(ctx, noRetryKey{}, true), call)
		}
		backend := r.opts.BackendOf(call)
		if backend == "" || ctx.Value(noRetryKey{}) != nil {
			return next(ctx, call)
		}
		budget := r.budget(backend)
		budget.sent(time.Now())
		var in *watchedInput
		if call.Input != nil {
			in = &watchedInput{Stream: call.Input}
			call.Input = in
		}
		res, err := next(ctx, call)
		if err == nil || !r.mayRetry(ctx, call, err, in, budget) {
			return res, err
		}
		if perr := pauseBeforeRetry(ctx, r.cfg.Backoff); perr != nil {
			return nil, err // the caller left during the pause: the failure stands
		}
		return next(ctx, call)
	}
}

// mayRetry reports whether the call that failed with err may be retried. The budget is
// checked last: a retry takes from it.
func (r *retrier) mayRetry(ctx context.Context, call *gateway.Call, err error, in *watchedInput, budget *retryBudget) bool {
	return Retryable(err) &&
		ctx.Err() == nil && // the caller is still waiting
		(in == nil || !in.touched.Load()) && // none of its input was read
		r.repeatable(ctx, call) &&
		timeLeft(ctx)-r.cfg.Backoff > 2*r.opts.MinRemaining &&
		budget.take(time.Now())
}

// repeatable reports whether running call again is harmless by its class or key.
func (r *retrier) repeatable(ctx context.Context, call *gateway.Call) bool {
	if r.opts.Repeatable != nil && r.opts.Repeatable(ctx, call) {
		return true
	}
	if _, ok := IdempotencyKeyFrom(ctx); ok {
		return true
	}
	return hasIdempotencyKey(call.Params)
}

// budget returns the retry budget of backend, making it on first use.
func (r *retrier) budget(backend string) *retryBudget {
	if b, ok := r.budgets.Load(backend); ok {
		return b.(*retryBudget)
	}
	b, _ := r.budgets.LoadOrStore(backend, newRetryBudget(r.cfg.Budget))
	return b.(*retryBudget)
}

// Retryable reports whether err is a failure the retry stage may retry: UNAVAILABLE that
// the target marked as not sent (gateway.ErrNotSent).
func Retryable(err error) bool {
	e, ok := errors.AsType[*gateway.Error](err)
	return ok && e.Code() == schemas.CodeUnavailable && errors.Is(err, gateway.ErrNotSent)
}

// notRetryable reports whether call's target says it must never be retried
// (gateway.Unretryable): it starts or resumes a task (NEKTE's delegate and task methods).
func notRetryable(call *gateway.Call) bool {
	u, ok := call.Target.(gateway.Unretryable)
	return ok && u.NotRetryable(call)
}

// noRetryKey marks a context whose calls are never retried: a task's.
type noRetryKey struct{}

// hasIdempotencyKey reports whether params (as a backend receives them: when the
// idempotency stage is not in the chain, the key stays in them) carry a non-empty string
// idempotency_key at the top level.
func hasIdempotencyKey(params []byte) bool {
	value, _, found, err := cutMember(params, IdempotencyKeyMember)
	return err == nil && found && len(value) > 2 && value[0] == '"'
}

// pauseBeforeRetry waits between half of backoff and all of it, or until ctx is done.
func pauseBeforeRetry(ctx context.Context, backoff time.Duration) error {
	if backoff <= 0 {
		return ctx.Err()
	}
	d := backoff/2 + rand.N(backoff/2+1) //nolint:gosec // jitter, not a secret
	t, err := pause(ctx, nil, d)
	t.Stop()
	return err
}

// watchedInput is a call's input stream that remembers being read or closed: a call whose
// first attempt touched its input cannot be run again, the messages read being gone.
type watchedInput struct {
	gateway.Stream
	touched atomic.Bool
}

func (w *watchedInput) Recv(ctx context.Context) ([]byte, error) {
	w.touched.Store(true)
	return w.Stream.Recv(ctx)
}

func (w *watchedInput) Close() error {
	w.touched.Store(true)
	return w.Stream.Close()
}
