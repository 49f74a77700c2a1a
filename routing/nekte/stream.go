package nekte

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// taskStream is the event stream of one task, the Stream of a nekte.delegate or
// nekte.task.stream result: the events recorded in the task's log from the start, then the
// live ones, ending after complete, error or cancelled. Each message is
// {"event": <name>, "data": <payload>}.
//
// Events written in this process arrive through the task's hub as they are written, with
// their full payloads. When no run of the task is active here (it runs in another
// process, or is suspended), the stream reads the store's log every poll interval. A
// stream that falls behind by more than the log's size forgets what it had queued and
// reads the store again, from the first event it has not delivered.
//
// Closing the stream detaches it; the task goes on.
type taskStream struct {
	svc       *Service
	h         *hub
	owner, id string
	closeOnce sync.Once

	// Guarded by h.mu.
	pending  []liveEvent
	next     int64 // seq of the next event to deliver
	tail     int64 // seq after the last event queued
	lagged   bool  // pending was dropped: read the store before delivering more
	poll     bool  // read the store before waiting again
	finished bool  // the final event was delivered, or the task is gone
	closed   bool
	orphan   *record // the record last read, when its runner's lease had lapsed (lease.go)

	wake chan struct{}
}

var _ gateway.Stream = (*taskStream)(nil)

// attach opens a stream of the owner's task id from its first recorded event.
func (s *Service) attach(ctx context.Context, owner, id string) (*taskStream, error) {
	h := s.hubs.acquire(taskKey(owner, id))
	ts := &taskStream{svc: s, h: h, owner: owner, id: id, next: 1, tail: 1, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := ts.refill(ctx); err != nil {
		s.hubs.release(h)
		return nil, err
	}
	h.subs[ts] = struct{}{}
	return ts, nil
}

// refill queues the events of the store's log not queued yet (from tail on). Events
// already queued keep their live form, whose payload may be fuller than the log's. h.mu
// is held.
func (ts *taskStream) refill(ctx context.Context) error {
	r, err := ts.svc.tasks.get(ctx, ts.owner, ts.id)
	if err != nil {
		return err
	}
	ts.pending = append(ts.pending, r.Log.since(ts.tail)...)
	ts.tail = max(ts.tail, r.Log.Last+1)
	ts.lagged, ts.poll = false, false
	ts.orphan = nil
	if lapsed(r, ts.svc.nowMs()) {
		ts.orphan = r
	}
	return nil
}

// enqueue queues events just written in this process. h.mu is held.
func (ts *taskStream) enqueue(events []liveEvent) {
	if ts.lagged || ts.closed {
		return
	}
	for _, ev := range events {
		if ev.seq < ts.tail {
			continue
		}
		if len(ts.pending) >= ts.svc.cfg.Tasks.MaxEvents {
			ts.lagged, ts.pending, ts.tail = true, nil, ts.next
			break
		}
		ts.pending = append(ts.pending, ev)
		ts.tail = ev.seq + 1
	}
	ts.signal()
}

func (ts *taskStream) signal() {
	select {
	case ts.wake <- struct{}{}:
	default:
	}
}

// Recv returns the next event message, or io.EOF after the final event (and when the task
// has expired from the store, the stream was closed, or the service is closing and nothing
// is left to deliver).
func (ts *taskStream) Recv(ctx context.Context) ([]byte, error) {
	for {
		msg, done, local, err := ts.step(ctx)
		if err != nil || msg != nil {
			return msg, err
		}
		if done {
			return nil, io.EOF
		}
		if ts.reclaimOrphan(ctx) {
			continue
		}
		if err := ts.wait(ctx, local); err != nil {
			return nil, err
		}
	}
}

// step delivers the next queued event, reading the store first when the queue must be
// refilled. It reports done when the stream has ended, and whether a run of the task is
// active in this process (then events arrive without polling).
func (ts *taskStream) step(ctx context.Context) (msg []byte, done, local bool, err error) {
	ts.h.mu.Lock()
	defer ts.h.mu.Unlock()
	if ts.closed || ts.finished {
		return nil, true, false, nil
	}
	if ts.lagged || ts.poll {
		if err := ts.refill(ctx); err != nil {
			if isNotFound(err) {
				ts.finished = true
				return nil, true, false, nil
			}
			return nil, false, false, gateway.AsError(err)
		}
	}
	if len(ts.pending) > 0 {
		ev := ts.pending[0]
		ts.pending = ts.pending[1:]
		ts.next = ev.seq + 1
		ts.finished = ev.final
		return ev.msg, false, false, nil
	}
	if ts.svc.isClosing() {
		return nil, true, false, nil
	}
	return nil, false, ts.h.runs > 0, nil
}

// reclaimOrphan suspends the task when the record last read showed its runner lost, and
// reports whether it did (then the store holds new events to read).
func (ts *taskStream) reclaimOrphan(ctx context.Context) bool {
	ts.h.mu.Lock()
	r := ts.orphan
	ts.orphan = nil
	ts.h.mu.Unlock()
	if r == nil {
		return false
	}
	if nr, err := ts.svc.reclaim(ctx, r); err != nil || nr.Status == r.Status {
		return false
	}
	ts.h.mu.Lock()
	ts.poll = true
	ts.h.mu.Unlock()
	return true
}

// wait blocks until an event may have arrived: a wake-up from the hub, or, when no run of
// the task is active here, the next poll of the store.
func (ts *taskStream) wait(ctx context.Context, local bool) error {
	var tick <-chan time.Time
	if !local {
		t := time.NewTimer(ts.svc.cfg.Tasks.PollInterval)
		defer t.Stop()
		tick = t.C
	}
	select {
	case <-ts.wake:
	case <-tick:
		ts.h.mu.Lock()
		ts.poll = true
		ts.h.mu.Unlock()
	case <-ts.svc.closing:
	case <-ctx.Done():
		return gateway.AsError(ctx.Err())
	}
	return nil
}

// Close detaches the stream from its task; the task goes on. It may be called more than
// once, from any goroutine.
func (ts *taskStream) Close() error {
	ts.closeOnce.Do(func() {
		ts.h.mu.Lock()
		ts.closed = true
		ts.pending = nil
		delete(ts.h.subs, ts)
		ts.h.mu.Unlock()
		ts.signal()
		ts.svc.hubs.release(ts.h)
	})
	return nil
}
