package resilience

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// breakerBuckets is how many steps a breaker's window slides in.
const breakerBuckets = 10

// Breaker states, as States and the refusals name them.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half-open"
)

// Breakers is the set of circuit breakers of one configuration: one per backend (named by
// BackendOf), made at the backend's first call with the settings BreakersConfig.For gives
// it. Safe for concurrent use.
//
// The breakers observe the backend through the calls of this process; a reload that leaves
// the breakers section unchanged keeps the set, with its state (the server carries it
// over, as it carries over unchanged targets); a changed section makes a new set, whose
// breakers start closed.
//
// Time is the process clock (time.Now), as for context deadlines: gobreaker reads it.
type Breakers struct {
	cfg BreakersConfig
	m   sync.Map // backend name → *breaker
}

// NewBreakers returns the breakers of cfg, nil when cfg is nil (their Middleware is then
// nil too, and the stage is out of the chain); cfg should have passed Validate.
func NewBreakers(cfg *BreakersConfig) *Breakers {
	if cfg == nil {
		return nil
	}
	return &Breakers{cfg: *cfg}
}

// breaker is the circuit breaker of one backend.
type breaker struct {
	name     string
	settings BreakerSettings
	cb       *gobreaker.CircuitBreaker[struct{}]
	// openedAt is when the breaker last opened, in Unix nanoseconds.
	openedAt atomic.Int64
	// refused is the CIRCUIT_OPEN error naming the backend, which each refusal completes.
	refused *gateway.Error
}

// get returns the breaker of backend, making it on first use.
func (b *Breakers) get(backend string) *breaker {
	if br, ok := b.m.Load(backend); ok {
		return br.(*breaker)
	}
	br, _ := b.m.LoadOrStore(backend, newBreaker(backend, b.cfg.For(backend)))
	return br.(*breaker)
}

func newBreaker(name string, s BreakerSettings) *breaker {
	br := &breaker{
		name:     name,
		settings: s,
		refused: gateway.NewError(schemas.CodeCircuitOpen).With("backend", name).
			With("recovery_hint", "RETRY_WITH_BACKOFF"),
	}
	br.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         name,
		MaxRequests:  uint32(s.HalfOpenProbes), //nolint:gosec // validated: at most MaxHalfOpenProbes
		Interval:     s.Window,
		BucketPeriod: s.Window / breakerBuckets,
		Timeout:      s.OpenDuration,
		ReadyToTrip:  s.readyToTrip,
		OnStateChange: func(_ string, _, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				br.openedAt.Store(time.Now().UnixNano())
			}
		},
		IsExcluded: func(err error) bool { return errors.Is(err, errIgnored) },
	})
	return br
}

// readyToTrip opens the breaker once the window holds at least MinRequests judged calls of
// which at least FailureRatio were faults. Calls still running and ignored ones are not
// judged yet or at all, so they count on neither side.
func (s BreakerSettings) readyToTrip(c gobreaker.Counts) bool {
	judged := int64(c.TotalSuccesses) + int64(c.TotalFailures)
	return judged >= int64(s.MinRequests) && float64(c.TotalFailures) >= s.FailureRatio*float64(judged)
}

// The outcomes reported to gobreaker: nil is a success, errFaulty a failure, errIgnored
// an excluded call.
var (
	errFaulty  = errors.New("backend fault")
	errIgnored = errors.New("says nothing about the backend")
)

// Middleware returns the breaker stage: each call of a backend (backendOf names it; calls
// reaching none pass through) runs only if the backend's breaker lets it, and its end is
// judged (Judge) into the breaker's window. An open breaker — or a half-open one whose
// probes are all running — refuses the call at once with CIRCUIT_OPEN, data {backend,
// state, retry_after_ms, recovery_hint}; retry_after_ms is the time until the breaker lets
// probes through, or, while the probes run, its open duration. A nil backendOf lets the
// target name it (gateway.BackendOf); a nil b has no stage (nil).
func (b *Breakers) Middleware(backendOf BackendOf) gateway.Middleware {
	if b == nil {
		return nil
	}
	if backendOf == nil {
		backendOf = gateway.BackendOf
	}
	return func(next gateway.Handler) gateway.Handler {
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			name := backendOf(call)
			if name == "" {
				return next(ctx, call)
			}
			return b.get(name).run(ctx, call, next)
		}
	}
}

// run runs call through next if the breaker allows it and reports how it ended. A call
// whose handler panics is reported as a fault (gobreaker recovers, reports and panics
// again), so a probe slot never stays taken.
func (br *breaker) run(ctx context.Context, call *gateway.Call, next gateway.Handler) (*gateway.Result, error) {
	var res *gateway.Result
	var err error
	_, refused := br.cb.Execute(func() (struct{}, error) {
		sentWith := timeLeft(ctx)
		res, err = next(ctx, call)
		return struct{}{}, verdictError(Judge(ctx, err, sentWith, br.settings.TimeoutBudget))
	})
	if errors.Is(refused, gobreaker.ErrOpenState) || errors.Is(refused, gobreaker.ErrTooManyRequests) {
		return nil, br.refusal(refused)
	}
	return res, err
}

// verdictError is how a verdict is reported to gobreaker: nil is a success, errFaulty a
// failure, errIgnored an excluded call.
func verdictError(v Verdict) error {
	switch v {
	case VerdictHealthy:
		return nil
	case VerdictFaulty:
		return errFaulty
	default:
		return errIgnored
	}
}

// refusal is the CIRCUIT_OPEN error for a call the breaker did not let through.
func (br *breaker) refusal(err error) *gateway.Error {
	if errors.Is(err, gobreaker.ErrTooManyRequests) {
		return br.refused.With("state", BreakerHalfOpen).With("retry_after_ms", br.settings.OpenDuration.Milliseconds())
	}
	return br.refused.With("state", BreakerOpen).With("retry_after_ms", ceilMillis(br.untilHalfOpen()))
}

// untilHalfOpen is how long an open breaker has left before it lets probes through.
func (br *breaker) untilHalfOpen() time.Duration {
	return time.Until(time.Unix(0, br.openedAt.Load()).Add(br.settings.OpenDuration))
}

// BreakerState is the state of one backend's breaker.
type BreakerState struct {
	// Backend names the backend.
	Backend string `json:"backend"`
	// State is BreakerClosed, BreakerOpen or BreakerHalfOpen.
	State string `json:"state"`
	// RetryAfterMs is, for an open breaker, the time until it lets probes through.
	RetryAfterMs int64 `json:"retry_after_ms,omitempty"`
}

// States returns the state of every breaker made so far, ordered by backend. An open
// breaker whose open duration has passed is reported half-open.
func (b *Breakers) States() []BreakerState {
	var out []BreakerState
	b.m.Range(func(_, v any) bool {
		out = append(out, v.(*breaker).state())
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Backend < out[j].Backend })
	return out
}

// Tripped returns the breakers that are open or half-open, ordered by backend, for
// readiness; nil when there are none. A nil Breakers (no breakers section) has none.
func (b *Breakers) Tripped() []BreakerState {
	if b == nil {
		return nil
	}
	var out []BreakerState
	for _, s := range b.States() {
		if s.State != BreakerClosed {
			out = append(out, s)
		}
	}
	return out
}

func (br *breaker) state() BreakerState {
	s := BreakerState{Backend: br.name}
	switch br.cb.State() {
	case gobreaker.StateOpen:
		s.State, s.RetryAfterMs = BreakerOpen, ceilMillis(br.untilHalfOpen())
	case gobreaker.StateHalfOpen:
		s.State = BreakerHalfOpen
	default:
		s.State = BreakerClosed
	}
	return s
}
