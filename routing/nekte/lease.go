package nekte

import (
	"context"
	"errors"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

// A running task's record carries a lease: the time until which its runner vouches that it
// is alive (record.LeaseUntil, epoch ms). The runner sets it when the run starts and renews
// it from its watch loop once a third of tasks.lease has passed. A replica that drains
// suspends its tasks itself; one that dies (killed, out of memory, its machine gone) cannot,
// and its tasks would stay "running" with nobody running them. Whoever reads such a record
// after its lease lapsed — nekte.task.status, nekte.task.resume, a stream of the task on any
// replica — suspends it with a checkpoint (reason "runner lost"), as a drain would have, so
// it can be resumed on any replica. The move is a compare-and-swap on the record, made only
// while the lease is still lapsed and the attempt unchanged: a runner that renews in time,
// or a resume that won the race, is never undone.

// runnerLost is the reason recorded when a lapsed lease suspends a task.
const runnerLost = "runner lost"

// lease returns the lease of a run starting or renewing at now.
func (s *Service) lease(now int64) int64 { return now + s.cfg.Tasks.Lease.Milliseconds() }

// renewDue reports whether a runner should renew r's lease at now.
func (s *Service) renewDue(r *record, now int64) bool {
	return r.LeaseUntil-now < s.cfg.Tasks.Lease.Milliseconds()*2/3
}

// lapsed reports whether r is running under a lease that ran out before now. A record
// written before leases existed (LeaseUntil 0) never lapses.
func lapsed(r *record, now int64) bool {
	return r.Status == nk.TaskRunning && r.LeaseUntil > 0 && now >= r.LeaseUntil
}

// reclaim suspends r's task when its lease lapsed and no run of it is active in this
// process, and returns the record as it now stands; otherwise it returns r as it is. It must
// not be called with the task's hub lock held.
func (s *Service) reclaim(ctx context.Context, r *record) (*record, error) {
	if !lapsed(r, s.nowMs()) || s.runs.active(taskKey(r.Owner, r.ID), r.Attempt) {
		return r, nil
	}
	nr, err := s.commit(ctx, r.Owner, r.ID, func(cur *record) error {
		if cur.Attempt != r.Attempt || !lapsed(cur, s.nowMs()) {
			return errStale
		}
		return s.suspendChange(cur, runnerLost)
	})
	switch {
	case err == nil:
		s.log.Warn("nekte: suspended a running task whose runner stopped renewing its lease; resume it on any replica",
			"task_id", r.ID, "attempt", r.Attempt)
		return nr, nil
	case errors.Is(err, errStale):
		return s.tasks.get(ctx, r.Owner, r.ID)
	default:
		return nil, err
	}
}

// current reads the owner's task id, reclaiming it first when its runner was lost.
func (s *Service) current(ctx context.Context, owner, id string) (*record, error) {
	r, err := s.tasks.get(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	return s.reclaim(ctx, r)
}
