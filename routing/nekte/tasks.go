package nekte

import (
	"context"
	"errors"
	"time"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// failChange moves a task to failed with e and emits error.
func (s *Service) failChange(r *record, e *gateway.Error) error {
	if err := move(r, nk.TaskFailed, e.Message(), s.nowMs()); err != nil {
		return err
	}
	r.Error = &taskError{Code: int32(e.Code()), Message: e.Message()}
	r.Checkpoint = nil
	r.emit(nk.ErrorEvent{TaskID: r.ID, Code: e.Code(), Message: e.Message()})
	return nil
}

// released frees a finished task's place in its owner's quota.
func (s *Service) released(ctx context.Context, r *record) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalWriteTimeout)
	defer cancel()
	if err := s.tasks.release(wctx, r.Owner, r.ID); err != nil {
		s.logf("releasing a finished task's quota", r.Owner, r.ID, err)
	}
}

// cancel cancels the owner's task id: the move is recorded, the stream gets cancelled, and
// the run (here, or in another process within its poll interval) has its backend call
// cancelled.
func (s *Service) cancel(ctx context.Context, owner, id, reason string) (nk.TaskLifecycleResult, error) {
	var prev nk.TaskStatus
	r, err := s.commit(ctx, owner, id, func(r *record) error {
		prev = r.Status
		if err := move(r, nk.TaskCancelled, reason, s.nowMs()); err != nil {
			return err
		}
		r.Checkpoint = nil
		r.emit(nk.CancelledEvent{TaskID: r.ID, Reason: reason, PreviousStatus: prev})
		return nil
	})
	if err != nil {
		return nk.TaskLifecycleResult{}, err
	}
	s.runs.stop(taskKey(owner, id), r.Attempt, errCauseCancelled)
	s.released(ctx, r)
	return nk.TaskLifecycleResult{TaskID: id, Status: nk.TaskCancelled, PreviousStatus: prev}, nil
}

// suspend suspends the owner's running task id with a checkpoint and stops its run.
func (s *Service) suspend(ctx context.Context, owner, id, reason string) (nk.TaskLifecycleResult, error) {
	r, err := s.commit(ctx, owner, id, func(r *record) error { return s.suspendChange(r, reason) })
	if err != nil {
		return nk.TaskLifecycleResult{}, err
	}
	s.runs.stop(taskKey(owner, id), r.Attempt, errCauseSuspended)
	return nk.TaskLifecycleResult{TaskID: id, Status: nk.TaskSuspended, PreviousStatus: nk.TaskRunning}, nil
}

// suspendChange moves a running task to suspended, saves its checkpoint (the input, the
// last progress and the partial results still in its log, unless they derive from a
// derive: false context) and emits suspended.
func (s *Service) suspendChange(r *record, reason string) error {
	if err := move(r, nk.TaskSuspended, reason, s.nowMs()); err != nil {
		return err
	}
	cp := &savedCheckpoint{Progress: r.Progress}
	if !r.NoDerive {
		cp.Partials = r.Log.partials(s.cfg.Tasks.MaxPartials)
	}
	r.Checkpoint = cp
	r.emit(nk.SuspendedEvent{TaskID: r.ID, CheckpointAvailable: true})
	return nil
}

// SuspendAll suspends every task running in this process, each with a checkpoint, and
// waits until their runs have stopped or ctx is done. The server calls it when draining;
// the tasks can then be resumed (nekte.task.resume) on any replica sharing the store. A
// task still being started is suspended once it runs; one that finishes meanwhile is left
// as it ended.
func (s *Service) SuspendAll(ctx context.Context) error {
	runs := s.runs.list()
	var errs []error
	pending := runs
	for len(pending) > 0 {
		var again []*run
		for _, rn := range pending {
			retry, err := s.suspendRun(ctx, rn)
			if err != nil {
				errs = append(errs, err)
			}
			if retry {
				again = append(again, rn)
			}
		}
		if len(again) == 0 {
			break
		}
		if err := sleep(ctx, s.cfg.Tasks.PollInterval/4); err != nil {
			return errors.Join(append(errs, err)...)
		}
		pending = again
	}
	for _, rn := range runs {
		select {
		case <-rn.done:
		case <-ctx.Done():
			return errors.Join(append(errs, ctx.Err())...)
		}
	}
	return errors.Join(errs...)
}

// suspendRun suspends the task of one run of this process. It asks for a retry when the
// task is not running yet.
func (s *Service) suspendRun(ctx context.Context, rn *run) (retry bool, err error) {
	var from nk.TaskStatus
	_, err = s.commit(ctx, rn.owner, rn.id, func(r *record) error {
		from = r.Status
		if r.Attempt != rn.attempt {
			return errStale
		}
		return s.suspendChange(r, "gateway draining")
	})
	var ge *gateway.Error
	switch {
	case err == nil:
		rn.cancel(errCauseSuspended)
		return false, nil
	case errors.Is(err, errStale), isNotFound(err):
		rn.cancel(errCauseMovedOn)
		return false, nil
	case errors.As(err, &ge) && ge.Code() == schemas.CodeTaskNotResumable:
		return from == nk.TaskPending || from == nk.TaskAccepted, nil
	default:
		rn.cancel(errCauseClosing)
		return false, err
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// resume re-runs the owner's suspended task id from its checkpoint, on this process.
func (s *Service) resume(ctx context.Context, owner string, p *nk.TaskResumeParams) (nk.TaskLifecycleResult, error) {
	if s.isClosing() {
		return nk.TaskLifecycleResult{}, errShuttingDown()
	}
	cur, err := s.current(ctx, owner, p.TaskID)
	if err != nil {
		return nk.TaskLifecycleResult{}, err
	}
	if !cur.Status.Resumable() {
		return nk.TaskLifecycleResult{}, errNotResumable(cur.ID, cur.Status)
	}
	c, ok := s.catalog.Lookup(cur.Cap)
	if !ok {
		return nk.TaskLifecycleResult{}, errCapabilityNotFound(cur.Cap)
	}
	env, err := s.contexts.forTask(ctx, cur)
	if err != nil {
		return nk.TaskLifecycleResult{}, err
	}
	r, err := s.commit(ctx, owner, p.TaskID, func(r *record) error {
		now := s.nowMs()
		if err := move(r, nk.TaskRunning, "resumed", now); err != nil {
			return err
		}
		r.Attempt++
		r.LeaseUntil = s.lease(now)
		if p.Budget != nil {
			r.Budget = p.Budget.Effective()
		}
		r.emit(nk.ResumedEvent{TaskID: r.ID, FromCheckpoint: r.Checkpoint != nil})
		return nil
	})
	if err != nil {
		return nk.TaskLifecycleResult{}, err
	}
	if err := s.start(ctx, r, c, env, r.checkpoint()); err != nil {
		_, _ = s.commit(context.WithoutCancel(ctx), owner, p.TaskID, func(r *record) error { return s.suspendChange(r, "gateway shutting down") })
		return nk.TaskLifecycleResult{}, err
	}
	return nk.TaskLifecycleResult{TaskID: r.ID, Status: nk.TaskRunning, PreviousStatus: nk.TaskSuspended}, nil
}

// statusResult is the result of nekte.task.status: the wire's fields, plus the task's
// progress and, for a failed task, its error.
type statusResult struct {
	TaskID              string        `json:"task_id"`
	Status              nk.TaskStatus `json:"status"`
	CheckpointAvailable bool          `json:"checkpoint_available"`
	CreatedAt           int64         `json:"created_at"`
	UpdatedAt           int64         `json:"updated_at"`
	Progress            Progress      `json:"progress"`
	Error               *taskError    `json:"error,omitempty"`
}

func (s *Service) status(ctx context.Context, owner, id string) (statusResult, error) {
	r, err := s.current(ctx, owner, id)
	if err != nil {
		return statusResult{}, err
	}
	return statusResult{
		TaskID: r.ID, Status: r.Status, CheckpointAvailable: r.checkpointAvailable(),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Progress: r.Progress, Error: r.Error,
	}, nil
}

// stream re-attaches to the owner's task id: its recorded events, then the live ones.
func (s *Service) stream(ctx context.Context, owner, id string) (*gateway.Result, error) {
	ts, err := s.attach(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	return &gateway.Result{Stream: ts, Events: true}, nil
}
