package nekte

import (
	"context"
	"errors"
	"sync"

	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// Causes with which a run's context is cancelled; the run reads them to know whether it
// has anything left to record.
var (
	errCauseCancelled = errors.New("nekte: task cancelled")
	errCauseSuspended = errors.New("nekte: task suspended")
	errCauseMovedOn   = errors.New("nekte: task moved on in another process")
	errCauseClosing   = errors.New("nekte: service closing")
	errCauseTimeout   = errors.New("nekte: task timed out")
)

// runSet is the runs of tasks active in this process: how to stop each. It holds handles
// on goroutines, not task state (that is in the store).
type runSet struct {
	mu     sync.Mutex
	m      map[string]*run
	closed bool
	wg     sync.WaitGroup
}

// run is one run of a task in this process.
type run struct {
	owner, id string
	attempt   int
	cancel    context.CancelCauseFunc
	done      chan struct{}
}

// add registers a run about to start; false once the set is shut.
func (rs *runSet) add(key string, r *run) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		return false
	}
	if rs.m == nil {
		rs.m = make(map[string]*run)
	}
	rs.m[key] = r
	rs.wg.Add(1)
	return true
}

// remove unregisters a run that has ended (unless a newer run of the task replaced it).
func (rs *runSet) remove(key string, r *run) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m[key] == r {
		delete(rs.m, key)
	}
	rs.wg.Done()
}

// stop cancels the run of a task in this process with cause, if there is one and it is
// the run of attempt (not a newer run that started since).
func (rs *runSet) stop(key string, attempt int, cause error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r, ok := rs.m[key]; ok && r.attempt == attempt {
		r.cancel(cause)
	}
}

// active reports whether a run of attempt of the task is active in this process.
func (rs *runSet) active(key string, attempt int) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.m[key]
	return ok && r.attempt == attempt
}

// list returns the runs active now.
func (rs *runSet) list() []*run {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]*run, 0, len(rs.m))
	for _, r := range rs.m {
		out = append(out, r)
	}
	return out
}

// shut refuses new runs, cancels the active ones with cause and waits for them to end.
func (rs *runSet) shut(cause error) {
	rs.mu.Lock()
	rs.closed = true
	for _, r := range rs.m {
		r.cancel(cause)
	}
	rs.mu.Unlock()
	rs.wg.Wait()
}

// start runs the task of record r on capability c in a goroutine of the Service. parent's
// values (the caller's identity, the trace) pass to the run; its cancellation and deadline
// do not: the task outlives the request that started it. env is the context envelope the
// capability may receive and cp the checkpoint of a resumed run (both may be nil).
func (s *Service) start(parent context.Context, r *record, c capability.Capability, env *envelope, cp *Checkpoint) error {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	ctx = withTaskID(withEnvelope(withCheckpoint(ctx, cp), env), r.ID)
	ctx = mcpbackend.WithinTask(ctx) // a tool its upstream offers as a task runs as one there
	rn := &run{owner: r.Owner, id: r.ID, attempt: r.Attempt, cancel: cancel, done: make(chan struct{})}
	key := taskKey(r.Owner, r.ID)
	if !s.runs.add(key, rn) {
		cancel(nil)
		return errShuttingDown()
	}
	h := s.hubs.acquire(key)
	h.setRunning(1)
	x := newExecution(s, rn, c, r)
	go func() {
		defer func() {
			h.setRunning(-1)
			s.hubs.release(h)
			cancel(nil)
			close(rn.done)
			s.runs.remove(key, rn)
		}()
		x.run(ctx)
	}()
	return nil
}
