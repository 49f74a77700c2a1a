package measure

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// CallFunc makes one call as worker (0 ≤ worker < the number of callers) and reports whether
// it failed.
type CallFunc func(ctx context.Context, worker int) error

// ClosedResult is the outcome of a closed-loop run.
type ClosedResult struct {
	Calls    int64         // calls that succeeded
	Errors   int64         // calls that failed
	FirstErr error         // the first failure, nil when none
	Elapsed  time.Duration // wall time of the run
}

// Rate returns successful calls per second.
func (r ClosedResult) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Calls) / r.Elapsed.Seconds()
}

// ClosedLoop runs callers workers, each making its next call as soon as the previous one
// answers, for d.
func ClosedLoop(ctx context.Context, callers int, d time.Duration, call CallFunc) ClosedResult {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	end, _ := ctx.Deadline() // the instant a client that checks deadlines itself gives up
	var calls, errs atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for w := range callers {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(end) {
				if err := call(ctx, w); err != nil {
					// A call cut by the end of the run is not a failure. grpc-go reports
					// DeadlineExceeded from its own clock, possibly before ctx's timer has
					// fired, so the time is checked too, not only ctx.
					if ctx.Err() != nil || !time.Now().Before(end) {
						return
					}
					errs.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	r := ClosedResult{Calls: calls.Load(), Errors: errs.Load(), Elapsed: time.Since(start)}
	if p := firstErr.Load(); p != nil {
		r.FirstErr = *p
	}
	return r
}

// OpenResult is the outcome of an open-loop run.
type OpenResult struct {
	Sent      int64           // calls started
	Errors    int64           // calls that failed
	Dropped   int64           // calls not started because MaxInFlight were outstanding
	FirstErr  error           // the first failure, nil when none
	Latencies []time.Duration // of the successful calls, sorted, each from its scheduled start
	Elapsed   time.Duration   // the scheduling window
}

// AchievedRate returns the successful calls per second.
func (r OpenResult) AchievedRate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(len(r.Latencies)) / r.Elapsed.Seconds()
}

// OpenLoop starts calls at rate per second for d, each at its scheduled time whatever the
// previous ones are doing, on at most maxInFlight workers; a call that finds every worker busy
// is dropped and counted. Latency is measured from the scheduled start, so a stalled
// generator or server is charged to the calls it delayed (no coordinated omission).
func OpenLoop(ctx context.Context, rate float64, d time.Duration, maxInFlight int, call CallFunc) OpenResult {
	interval := time.Duration(float64(time.Second) / rate)
	sched := make(chan time.Time, maxInFlight)
	lat := make([][]time.Duration, maxInFlight)
	var errs, dropped atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	busy := make(chan struct{}, maxInFlight) // a token per worker with a call in hand
	for w := range maxInFlight {
		wg.Go(func() {
			for t := range sched {
				err := call(ctx, w)
				<-busy
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				lat[w] = append(lat[w], time.Since(t))
			}
		})
	}
	start := time.Now()
	var sent int64
	for i := 0; ; i++ {
		t := start.Add(time.Duration(i) * interval)
		if t.Sub(start) >= d || ctx.Err() != nil {
			break
		}
		if wait := time.Until(t); wait > 0 {
			time.Sleep(wait)
		}
		select {
		case busy <- struct{}{}:
			sched <- t
			sent++
		default:
			dropped.Add(1)
		}
	}
	elapsed := time.Since(start) // the scheduling window; calls still running finish below
	close(sched)
	wg.Wait()
	r := OpenResult{Sent: sent, Errors: errs.Load(), Dropped: dropped.Load(), Elapsed: elapsed}
	for _, l := range lat {
		r.Latencies = append(r.Latencies, l...)
	}
	slices.Sort(r.Latencies)
	if p := firstErr.Load(); p != nil {
		r.FirstErr = *p
	}
	return r
}
