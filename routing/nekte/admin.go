package nekte

import (
	"context"
	"slices"
	"sync"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

// DefaultRecentTasks is how many tasks the operator's view lists by default
// (Options.RecentTasks).
const DefaultRecentTasks = 256

// recentTasks names the tasks this process created, newest last, at most max: the
// operator's view of tasks across callers (admin.tasks.*). The state store cannot list
// keys, so the view is this process's own tasks; each one's state is read from the store,
// so changes other replicas make to them show.
type recentTasks struct {
	mu   sync.Mutex
	max  int
	keys []taskRef
}

// taskRef names one task: its owner (the caller's subject) and id.
type taskRef struct{ owner, id string }

func (t *recentTasks) add(owner, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.keys) >= t.max {
		t.keys = slices.Delete(t.keys, 0, len(t.keys)-t.max+1)
	}
	t.keys = append(t.keys, taskRef{owner, id})
}

func (t *recentTasks) list() []taskRef {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.keys)
}

// owner returns the owner of the task id, when it is in the list.
func (t *recentTasks) owner(id string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range slices.Backward(t.keys) {
		if k.id == id {
			return k.owner, true
		}
	}
	return "", false
}

// TaskView is one task as the operator sees it (admin.tasks.list).
type TaskView struct {
	TaskID string        `json:"task_id"`
	Owner  string        `json:"owner"`
	Cap    string        `json:"cap"`
	Status nk.TaskStatus `json:"status"`
	// Attempt counts runs: 1, and one more per resume.
	Attempt             int  `json:"attempt"`
	CheckpointAvailable bool `json:"checkpoint_available"`
	Resumable           bool `json:"resumable"`
	// Progress is the task's last progress.
	Progress Progress `json:"progress"`
	// CreatedAt, UpdatedAt: epoch milliseconds.
	CreatedAt int64      `json:"created_at"`
	UpdatedAt int64      `json:"updated_at"`
	Error     *taskError `json:"error,omitempty"`
}

// OperatorTasks returns the tasks this process created that the store still holds,
// newest first, at most Options.RecentTasks; with status set, only those in it. Tasks
// the store no longer holds (their records expired) are left out.
func (s *Service) OperatorTasks(ctx context.Context, status nk.TaskStatus) ([]TaskView, error) {
	refs := s.recent.list()
	out := make([]TaskView, 0, len(refs))
	for _, k := range slices.Backward(refs) {
		r, err := s.tasks.get(ctx, k.owner, k.id)
		switch {
		case isNotFound(err):
			continue
		case err != nil:
			return nil, err
		}
		if status != "" && r.Status != status {
			continue
		}
		out = append(out, TaskView{
			TaskID: r.ID, Owner: r.Owner, Cap: r.Cap, Status: r.Status, Attempt: r.Attempt,
			CheckpointAvailable: r.checkpointAvailable(), Resumable: r.Status.Resumable(),
			Progress: r.Progress, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Error: r.Error,
		})
	}
	return out, nil
}

// OperatorCancel cancels the task id on its owner's behalf, as nekte.task.cancel would,
// with reason (default "cancelled by an operator"). A task this process did not create, or
// no longer lists, is TASK_NOT_FOUND.
func (s *Service) OperatorCancel(ctx context.Context, id, reason string) (nk.TaskLifecycleResult, error) {
	owner, ok := s.recent.owner(id)
	if !ok {
		return nk.TaskLifecycleResult{}, errTaskNotFound(id)
	}
	if reason == "" {
		reason = "cancelled by an operator"
	}
	return s.cancel(ctx, owner, id, reason)
}

// OperatorResume resumes the suspended task id on its owner's behalf, as
// nekte.task.resume would (from its checkpoint, on this process).
func (s *Service) OperatorResume(ctx context.Context, id string) (nk.TaskLifecycleResult, error) {
	owner, ok := s.recent.owner(id)
	if !ok {
		return nk.TaskLifecycleResult{}, errTaskNotFound(id)
	}
	return s.resume(ctx, owner, &nk.TaskResumeParams{TaskID: id})
}
