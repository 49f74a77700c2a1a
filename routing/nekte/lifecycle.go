package nekte

import (
	"fmt"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

// move is the one function that changes a task's status. It checks the move against the
// NEKTE state machine
//
//	pending → accepted → running → completed
//	running → suspended → running (resume)
//	any non-terminal state → cancelled | failed
//
// and, when it is allowed, sets the status, the timestamps and the running time, and emits
// status_change. It runs only inside taskStore.apply, so the move is one compare-and-swap
// of the record: of two processes moving the same task, one wins and the other sees the
// new status.
//
// A refused move returns TASK_NOT_CANCELLABLE (to cancelled), TASK_NOT_RESUMABLE (to
// running, and to suspended), or errStale for the moves only the gateway's own runner
// makes (to accepted, completed or failed), which mean the task moved on under it.
func move(r *record, to nk.TaskStatus, reason string, now int64) error {
	from := r.Status
	if !from.CanTransition(to) {
		return refused(r.ID, from, to)
	}
	if from == nk.TaskRunning {
		r.ElapsedMs = r.runningMs(now)
		r.StartedAt, r.LeaseUntil = 0, 0
	}
	if to == nk.TaskRunning {
		r.StartedAt = now
	}
	if to.Terminal() {
		r.CompletedAt = now
	}
	r.Status = to
	r.UpdatedAt = now
	r.emit(nk.StatusChangeEvent{TaskID: r.ID, From: from, To: to, Reason: reason})
	return nil
}

// refused returns the error for a move the state machine does not allow.
func refused(id string, from, to nk.TaskStatus) error {
	switch to {
	case nk.TaskCancelled:
		return errNotCancellable(id, from)
	case nk.TaskRunning:
		return errNotResumable(id, from)
	case nk.TaskSuspended:
		return errNotSuspendable(id, from)
	default:
		return fmt.Errorf("%w: %s cannot move from %s to %s", errStale, id, from, to)
	}
}
