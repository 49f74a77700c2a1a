package resilience

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// queueLimits are the limits the queue tests run with: one call at a time, Q_max = 4, so
// calls are throttled from the 5th in the queue and refused from the 9th.
var queueLimits = TargetLimits{MaxConcurrency: 1, Queue: 4, Throttle: 100 * time.Millisecond, MaxWait: time.Second}

// fillQueue takes every place of b and puts ahead calls in its queue, each of which gives
// its place back as soon as it gets one. It returns the places taken; the queued calls
// finish once those are released (and their holds are over).
func fillQueue(t *testing.T, b *backpressure, ahead int, wg *sync.WaitGroup) []queueSlot {
	t.Helper()
	var held []queueSlot
	for range b.limits.MaxConcurrency {
		s, err := b.acquire(t.Context())
		if err != nil {
			t.Fatalf("taking a free place: %v", err)
		}
		held = append(held, s)
	}
	for range ahead {
		wg.Go(func() {
			s, err := b.acquire(context.Background())
			if err != nil {
				t.Errorf("a call ahead was refused: %v", err)
				return
			}
			s.release(true)
		})
		synctest.Wait() // queued in order
	}
	if _, queued := b.load(); queued != ahead {
		t.Fatalf("queue length %d, want %d", queued, ahead)
	}
	return held
}

func wantRefusal(t *testing.T, err error, code schemas.Code, reason string) {
	t.Helper()
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Code() != code {
		t.Fatalf("got %v, want code %d", err, code)
	}
	if reason == "" {
		return
	}
	if got := ge.Data()["reason"]; got != reason {
		t.Errorf("reason %v, want %s", got, reason)
	}
	if ms, ok := ge.Data()["retry_after_ms"].(int64); !ok || ms < 1 {
		t.Errorf("retry_after_ms %v, want ≥ 1", ge.Data()["retry_after_ms"])
	}
}

// TestBackpressureQueuePolicy puts a call behind a given number of queued ones and checks
// when it gets its place: at once (the places free at t=0), after its throttle hold, or
// never (refused at once).
func TestBackpressureQueuePolicy(t *testing.T) {
	tests := []struct {
		name       string
		ahead      int           // calls already queued; this call makes the queue ahead+1 long
		deadline   time.Duration // of the call; 0: none
		wantWait   time.Duration
		wantReason string // of the refusal; "" when admitted
	}{
		{"first in the queue", 0, 0, 0, ""},
		{"at Q_max: no hold", 3, 0, 0, ""},
		{"just past Q_max: hold ¼ throttle", 4, 0, 25 * time.Millisecond, ""},
		{"¾ of the way to 2·Q_max", 6, 0, 75 * time.Millisecond, ""},
		{"at 2·Q_max: the whole throttle", 7, 0, 100 * time.Millisecond, ""},
		{"past 2·Q_max: refused at once", 8, 0, 0, reasonQueueFull},
		{"deadline shorter than the hold: refused at once", 7, 99 * time.Millisecond, 0, reasonDeadlineTooShort},
		{"deadline just past the hold", 7, 101 * time.Millisecond, 100 * time.Millisecond, ""},
		{"deadline without a hold", 3, 10 * time.Millisecond, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBackpressure(queueLimits, time.Now)
				var wg sync.WaitGroup
				held := fillQueue(t, b, tt.ahead, &wg)
				ctx := t.Context()
				if tt.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.deadline)
					defer cancel()
				}
				type outcome struct {
					s    queueSlot
					err  error
					took time.Duration
				}
				done := make(chan outcome, 1)
				go func() {
					start := time.Now()
					s, err := b.acquire(ctx)
					done <- outcome{s, err, time.Since(start)}
				}()
				synctest.Wait()
				for _, s := range held {
					s.release(false)
				}
				got := <-done
				wg.Wait()
				if got.took != tt.wantWait {
					t.Errorf("waited %s, want %s", got.took, tt.wantWait)
				}
				if tt.wantReason != "" {
					wantRefusal(t, got.err, schemas.CodeOverloaded, tt.wantReason)
					return
				}
				if got.err != nil {
					t.Fatalf("refused: %v", got.err)
				}
				got.s.release(true)
				if active, queued := b.load(); active != 0 || queued != 0 {
					t.Errorf("after the last call: %d running, %d queued", active, queued)
				}
			})
		})
	}
}

// TestBackpressureCallerLeaves: a call whose caller goes away (or whose deadline passes)
// while it waits leaves the queue at once, and the place it waited for goes to nobody.
func TestBackpressureCallerLeaves(t *testing.T) {
	tests := []struct {
		name     string
		ahead    int
		leave    func(cancel context.CancelFunc) // what ends the wait, after 10ms
		deadline time.Duration
		wantCode schemas.Code
	}{
		{"cancelled while waiting its turn", 0, func(c context.CancelFunc) { c() }, 0, schemas.CodeCancelled},
		{"cancelled while held", 4, func(c context.CancelFunc) { c() }, 0, schemas.CodeCancelled},
		{"deadline passes while waiting its turn", 0, func(context.CancelFunc) {}, 10 * time.Millisecond, schemas.CodeDeadlineExceeded},
		{"deadline passes waiting its turn after the hold", 4, func(context.CancelFunc) {}, 60 * time.Millisecond, schemas.CodeDeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBackpressure(queueLimits, time.Now)
				var wg sync.WaitGroup
				held := fillQueue(t, b, tt.ahead, &wg)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tt.deadline > 0 {
					ctx, cancel = context.WithTimeout(ctx, tt.deadline)
					defer cancel()
				}
				done := make(chan error, 1)
				go func() {
					_, err := b.acquire(ctx)
					done <- err
				}()
				time.Sleep(10 * time.Millisecond)
				tt.leave(cancel)
				if tt.deadline > 0 {
					time.Sleep(tt.deadline)
				}
				synctest.Wait()
				err := <-done
				wantRefusal(t, err, tt.wantCode, "")
				if tt.wantCode == schemas.CodeDeadlineExceeded && gateway.AsError(err).Data()["layer"] != gateway.LayerGateway {
					t.Errorf("layer %v, want %s", gateway.AsError(err).Data()["layer"], gateway.LayerGateway)
				}
				if _, queued := b.load(); queued != tt.ahead {
					t.Errorf("queue length %d after the caller left, want %d", queued, tt.ahead)
				}
				for _, s := range held {
					s.release(false)
				}
				wg.Wait()
				if active, queued := b.load(); active != 0 || queued != 0 || b.waiting.Len() != 0 {
					t.Errorf("drained: %d running, %d queued, %d waiting", active, queued, b.waiting.Len())
				}
			})
		})
	}
}

// TestBackpressureMaxWait: a call that waits max_wait without its turn is refused then.
func TestBackpressureMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackpressure(queueLimits, time.Now)
		held := fillQueue(t, b, 0, &sync.WaitGroup{})
		start := time.Now()
		_, err := b.acquire(t.Context())
		if took := time.Since(start); took != queueLimits.MaxWait {
			t.Errorf("refused after %s, want max_wait %s", took, queueLimits.MaxWait)
		}
		wantRefusal(t, err, schemas.CodeOverloaded, reasonQueueTimeout)
		held[0].release(false)
		if active, queued := b.load(); active != 0 || queued != 0 {
			t.Errorf("%d running, %d queued", active, queued)
		}
	})
}

// TestBackpressureFIFO: places go to waiting calls in the order they came.
func TestBackpressureFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackpressure(TargetLimits{MaxConcurrency: 2, Queue: 8, Throttle: time.Millisecond, MaxWait: time.Second}, time.Now)
		var held []queueSlot
		for range 2 {
			s, _ := b.acquire(t.Context())
			held = append(held, s)
		}
		var (
			mu    sync.Mutex
			order []int
			wg    sync.WaitGroup
		)
		slots := make(chan queueSlot, 5)
		for i := range 5 {
			wg.Go(func() {
				s, err := b.acquire(t.Context())
				if err != nil {
					t.Errorf("call %d: %v", i, err)
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				slots <- s
			})
			synctest.Wait()
		}
		for _, s := range held { // one place at a time, so the order of grants is observable
			s.release(false)
			synctest.Wait()
		}
		for range 5 {
			(<-slots).release(false)
			synctest.Wait()
		}
		wg.Wait()
		for i, got := range order {
			if got != i {
				t.Fatalf("order %v, want 0 1 2 3 4", order)
			}
		}
	})
}

// TestBackpressureUnderContention runs many callers, some of which give up, against a
// small queue: never more than max_concurrency run at once, and everything is given back.
func TestBackpressureUnderContention(t *testing.T) {
	const maxConc = 3
	b := newBackpressure(TargetLimits{MaxConcurrency: maxConc, Queue: 4, Throttle: time.Millisecond, MaxWait: 20 * time.Millisecond}, time.Now)
	var running, peak, admitted, refused atomic.Int32
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 40 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(3000))*time.Microsecond)
				s, err := b.acquire(ctx)
				cancel()
				if err != nil {
					refused.Add(1)
					continue
				}
				admitted.Add(1)
				n := running.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
				running.Add(-1)
				s.release(rng.IntN(2) == 0)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > maxConc {
		t.Errorf("%d calls ran at once, limit %d", p, maxConc)
	}
	if admitted.Load() == 0 || refused.Load() == 0 {
		t.Errorf("admitted %d, refused %d: the load did not exercise both", admitted.Load(), refused.Load())
	}
	if active, queued := b.load(); active != 0 || queued != 0 || b.waiting.Len() != 0 {
		t.Errorf("after the load: %d running, %d queued, %d waiting", active, queued, b.waiting.Len())
	}
}

// TestBackpressureRetryAfter: a refused call is told how long the queue takes to drain
// back to Q_max, from the target's average service time.
func TestBackpressureRetryAfter(t *testing.T) {
	limits := TargetLimits{MaxConcurrency: 2, Queue: 4, Throttle: 30 * time.Millisecond, MaxWait: time.Second}
	tests := []struct {
		name    string
		service time.Duration
		q       int
		want    time.Duration
	}{
		{"no call completed yet: the throttle", 0, 9, 30 * time.Millisecond},
		{"one turn", 10 * time.Millisecond, 5, 10 * time.Millisecond},
		{"excess of 5 over 2 places: 3 turns", 10 * time.Millisecond, 9, 30 * time.Millisecond},
		{"never below a millisecond", time.Microsecond, 5, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackpressure(limits, time.Now)
			b.service = float64(tt.service)
			if got := b.drainTimeLocked(tt.q); got != tt.want {
				t.Errorf("drain time %s, want %s", got, tt.want)
			}
		})
	}
}

// TestBackpressureServiceAverage: completed calls feed the service time average; calls
// that did not complete do not.
func TestBackpressureServiceAverage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackpressure(queueLimits, time.Now)
		for _, c := range []struct {
			d      time.Duration
			sample bool
		}{{20 * time.Millisecond, true}, {time.Second, false}, {40 * time.Millisecond, true}} {
			s, err := b.acquire(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(c.d)
			s.release(c.sample)
		}
		if want := 22 * time.Millisecond; time.Duration(b.service) != want {
			t.Errorf("service average %s, want %s (20ms, then 10%% of the way to 40ms)", time.Duration(b.service), want)
		}
	})
}
