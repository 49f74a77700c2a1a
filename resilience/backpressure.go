package resilience

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// TargetLimits are the admission limits of one backend: at most MaxConcurrency of its calls
// run at once, and the others wait in a queue whose length Q counts the calls waiting,
// Q_max being Queue:
//
//   - Q ≤ Q_max: the call waits its turn;
//   - Q_max < Q ≤ 2·Q_max: it is first held for Throttle × (Q − Q_max) / Q_max — a wait
//     proportional to the excess, so callers that keep the queue long are slowed — then
//     waits its turn; a call whose deadline would not leave room for that hold and its
//     expected service time is refused at once;
//   - Q > 2·Q_max: it is refused at once.
//
// No call waits more than MaxWait in all, nor past its deadline; refused calls get
// OVERLOADED (5002) with retry_after_ms, and a call whose caller goes away while it waits
// leaves the queue at once.
type TargetLimits struct {
	// MaxConcurrency is how many of the backend's calls run at once.
	MaxConcurrency int `yaml:"max_concurrency" json:"max_concurrency,omitempty"`
	// Queue is Q_max: past it calls are throttled, past twice it they are refused.
	Queue int `yaml:"queue" json:"queue,omitempty"`
	// Throttle is the hold of a call that makes the queue 2·Q_max long; shorter queues
	// hold in proportion.
	Throttle time.Duration `yaml:"throttle" json:"throttle,omitempty"`
	// MaxWait bounds a call's whole wait (hold and turn); it must be longer than Throttle.
	MaxWait time.Duration `yaml:"max_wait" json:"max_wait,omitempty"`
}

// Default limits of a backend.
const (
	DefaultAdmissionMaxConcurrency = 64
	DefaultAdmissionQueue          = 32
	DefaultAdmissionThrottle       = 10 * time.Millisecond
	DefaultAdmissionMaxWait        = time.Second
)

// serviceWeight is the weight of one call's service time in a backend's average, which
// estimates how fast its queue drains (retry_after_ms, the deadline check of a hold).
const serviceWeight = 0.1

// builtinTargetLimits are the limits of a backend that nothing configures.
var builtinTargetLimits = TargetLimits{
	MaxConcurrency: DefaultAdmissionMaxConcurrency,
	Queue:          DefaultAdmissionQueue,
	Throttle:       DefaultAdmissionThrottle,
	MaxWait:        DefaultAdmissionMaxWait,
}

// over returns l with its zero fields taken from def.
func (l TargetLimits) over(def TargetLimits) TargetLimits {
	zeroTo(&l.MaxConcurrency, def.MaxConcurrency)
	zeroTo(&l.Queue, def.Queue)
	zeroTo(&l.Throttle, def.Throttle)
	zeroTo(&l.MaxWait, def.MaxWait)
	return l
}

// problems returns what is wrong with l (defaults applied); paths are relative to it.
func (l TargetLimits) problems() []ConfigError {
	var out []ConfigError
	bad := func(path, format string, args ...any) { out = append(out, problemAt(path, format, args...)) }
	if l.MaxConcurrency < 1 {
		bad("max_concurrency", "max_concurrency is %d: it must be at least 1", l.MaxConcurrency)
	}
	if l.Queue < 1 {
		bad("queue", "queue is %d: it must be at least 1", l.Queue)
	}
	if l.Throttle <= 0 {
		bad("throttle", "throttle must be positive")
	}
	if l.MaxWait <= l.Throttle {
		bad("max_wait", "max_wait (%s) must be longer than throttle (%s)", l.MaxWait, l.Throttle)
	}
	return out
}

// backpressure is the concurrency limit and queue of one backend.
type backpressure struct {
	limits TargetLimits
	now    func() time.Time

	mu     sync.Mutex
	active int
	// queued counts the calls in the queue: held (throttled) and waiting for their turn.
	queued int
	// waiting holds the *slotWaiter of each call waiting for its turn, oldest first.
	waiting list.List
	// service is the average service time of the backend's calls, in nanoseconds.
	service float64
}

// slotWaiter is a call waiting for its turn; ready is closed when a finishing call hands it
// its place (granted is then true, under the mutex).
type slotWaiter struct {
	ready   chan struct{}
	granted bool
}

func newBackpressure(limits TargetLimits, now func() time.Time) *backpressure {
	return &backpressure{limits: limits, now: now}
}

// queueSlot is a place taken by acquire; release gives it back. The zero queueSlot holds nothing.
type queueSlot struct {
	b     *backpressure
	start time.Time
}

// acquire takes a place for a call, waiting as TargetLimits says. The error is an
// OVERLOADED *gateway.Error, or the context's error when the caller went away or the
// deadline passed while the call waited.
func (b *backpressure) acquire(ctx context.Context) (queueSlot, error) {
	b.mu.Lock()
	if b.active < b.limits.MaxConcurrency && b.waiting.Len() == 0 {
		b.active++
		b.mu.Unlock()
		return queueSlot{b: b, start: b.now()}, nil
	}
	q := b.queued + 1 // the queue's length with this call in it
	if q > 2*b.limits.Queue {
		retry := b.drainTimeLocked(q)
		b.mu.Unlock()
		return queueSlot{}, overloadedError(reasonQueueFull, retry)
	}
	b.queued++
	service := time.Duration(b.service)
	b.mu.Unlock()
	start := b.now()
	if hold := b.throttle(q); hold > 0 {
		if err := b.hold(ctx, start, hold, service, q); err != nil {
			b.leave()
			return queueSlot{}, err
		}
	}
	return b.wait(ctx, start)
}

// throttle returns the hold of a call that makes the queue q long.
func (b *backpressure) throttle(q int) time.Duration {
	excess := q - b.limits.Queue
	if excess <= 0 {
		return 0
	}
	return b.limits.Throttle * time.Duration(excess) / time.Duration(b.limits.Queue)
}

// hold keeps a throttled call back for d, unless its deadline leaves no room for d and the
// backend's service time (then it is refused at once) or its caller goes away.
func (b *backpressure) hold(ctx context.Context, start time.Time, d, service time.Duration, q int) error {
	if dl, ok := ctx.Deadline(); ok && dl.Sub(start) < d+service {
		b.mu.Lock()
		retry := b.drainTimeLocked(q)
		b.mu.Unlock()
		return overloadedError(reasonDeadlineTooShort, retry)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return gateway.AsError(ctx.Err())
	}
}

// leave takes a call that never waited for its turn out of the queue.
func (b *backpressure) leave() {
	b.mu.Lock()
	b.queued--
	b.mu.Unlock()
}

// wait waits for the call's turn, until MaxWait after start at the latest.
func (b *backpressure) wait(ctx context.Context, start time.Time) (queueSlot, error) {
	b.mu.Lock()
	if b.active < b.limits.MaxConcurrency && b.waiting.Len() == 0 {
		b.queued--
		b.active++
		b.mu.Unlock()
		return queueSlot{b: b, start: b.now()}, nil
	}
	w := &slotWaiter{ready: make(chan struct{})}
	e := b.waiting.PushBack(w)
	b.mu.Unlock()
	t := time.NewTimer(b.limits.MaxWait - b.now().Sub(start))
	defer t.Stop()
	select {
	case <-w.ready:
		return queueSlot{b: b, start: b.now()}, nil
	case <-ctx.Done():
		if !b.abandon(e, w) { // handed a place as the caller left: pass it on
			queueSlot{b: b}.release(false)
		}
		return queueSlot{}, gateway.AsError(ctx.Err())
	case <-t.C:
		if !b.abandon(e, w) { // handed a place just in time: take it
			return queueSlot{b: b, start: b.now()}, nil
		}
		b.mu.Lock()
		retry := b.drainTimeLocked(b.queued + 1)
		b.mu.Unlock()
		return queueSlot{}, overloadedError(reasonQueueTimeout, retry)
	}
}

// abandon takes a waiting call out of the queue and reports true, or reports false when
// it was handed a place already.
func (b *backpressure) abandon(e *list.Element, w *slotWaiter) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.granted {
		return false
	}
	b.waiting.Remove(e)
	b.queued--
	return true
}

// release gives the place back: to the oldest waiting call, else to the pool. sample says
// whether the time since the place was taken is a service time of the backend (a call that
// completed, not one whose result streams on or whose caller left).
func (s queueSlot) release(sample bool) {
	b := s.b
	if b == nil {
		return
	}
	var took time.Duration
	if sample {
		took = b.now().Sub(s.start)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if took > 0 {
		if b.service == 0 {
			b.service = float64(took)
		} else {
			b.service += serviceWeight * (float64(took) - b.service)
		}
	}
	if front := b.waiting.Front(); front != nil {
		w := b.waiting.Remove(front).(*slotWaiter)
		w.granted = true
		b.queued--
		close(w.ready)
		return
	}
	b.active--
}

// drainTimeLocked estimates how long a queue q long takes to drain back to Q_max, where
// calls are no longer throttled: the retry_after_ms of a refused call (at least a
// millisecond; Throttle while no call has completed yet).
func (b *backpressure) drainTimeLocked(q int) time.Duration {
	if b.service == 0 {
		return b.limits.Throttle
	}
	excess := max(q-b.limits.Queue, 1)
	turns := (excess + b.limits.MaxConcurrency - 1) / b.limits.MaxConcurrency
	return max(time.Duration(float64(turns)*b.service), time.Millisecond)
}

// load returns the calls running and queued.
func (b *backpressure) load() (active, queued int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.active, b.queued
}
