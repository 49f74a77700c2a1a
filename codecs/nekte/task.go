package nekte

import "slices"

// TaskStatus is a state of the task lifecycle.
type TaskStatus string

// The task states. A task starts pending; completed, failed and cancelled are final.
const (
	TaskPending   TaskStatus = "pending"
	TaskAccepted  TaskStatus = "accepted"
	TaskRunning   TaskStatus = "running"
	TaskSuspended TaskStatus = "suspended"
	TaskCompleted TaskStatus = "completed"
	TaskFailed    TaskStatus = "failed"
	TaskCancelled TaskStatus = "cancelled"
)

// transitions is the task state machine of the NEKTE primitives: each state and the
// states it may move to.
var transitions = map[TaskStatus][]TaskStatus{
	TaskPending:   {TaskAccepted, TaskCancelled, TaskFailed},
	TaskAccepted:  {TaskRunning, TaskCancelled, TaskFailed},
	TaskRunning:   {TaskCompleted, TaskFailed, TaskCancelled, TaskSuspended},
	TaskSuspended: {TaskRunning, TaskCancelled, TaskFailed},
}

// CanTransition reports whether the state machine allows moving from s to next.
func (s TaskStatus) CanTransition(next TaskStatus) bool {
	return slices.Contains(transitions[s], next)
}

// Terminal reports whether s is a final state (completed, failed or cancelled).
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// Cancellable reports whether a task in state s may be cancelled; otherwise
// nekte.task.cancel answers TASK_NOT_CANCELLABLE.
func (s TaskStatus) Cancellable() bool { return s.CanTransition(TaskCancelled) }

// Resumable reports whether a task in state s may be resumed (it is suspended); otherwise
// nekte.task.resume answers TASK_NOT_RESUMABLE.
func (s TaskStatus) Resumable() bool { return s == TaskSuspended }

// TaskCancelParams are the params of nekte.task.cancel.
type TaskCancelParams struct {
	TaskID string `json:"task_id"`
	Reason string `json:"reason,omitempty"`
}

// TaskResumeParams are the params of nekte.task.resume. Budget nil keeps the task's.
type TaskResumeParams struct {
	TaskID string  `json:"task_id"`
	Budget *Budget `json:"budget,omitempty"`
}

// TaskStatusParams are the params of nekte.task.status.
type TaskStatusParams struct {
	TaskID string `json:"task_id"`
}

var (
	_ Params = (*TaskCancelParams)(nil)
	_ Params = (*TaskResumeParams)(nil)
	_ Params = (*TaskStatusParams)(nil)
)

// Validate checks task_id (required, at most MaxIDLen characters).
func (p *TaskCancelParams) Validate() error {
	return checkString("task_id", p.TaskID, true, MaxIDLen)
}

// Validate checks task_id (required, at most MaxIDLen characters) and the budget.
func (p *TaskResumeParams) Validate() error {
	if err := checkString("task_id", p.TaskID, true, MaxIDLen); err != nil {
		return err
	}
	return p.Budget.validate("budget")
}

// Validate checks task_id (required, at most MaxIDLen characters).
func (p *TaskStatusParams) Validate() error {
	return checkString("task_id", p.TaskID, true, MaxIDLen)
}

// TaskLifecycleResult is the result of nekte.task.cancel and nekte.task.resume: the
// task's new status and the one it left.
type TaskLifecycleResult struct {
	TaskID         string     `json:"task_id"`
	Status         TaskStatus `json:"status"`
	PreviousStatus TaskStatus `json:"previous_status"`
}

// TaskStatusResult is the result of nekte.task.status. Timestamps are epoch
// milliseconds.
type TaskStatusResult struct {
	TaskID              string     `json:"task_id"`
	Status              TaskStatus `json:"status"`
	CheckpointAvailable bool       `json:"checkpoint_available"`
	CreatedAt           int64      `json:"created_at"`
	UpdatedAt           int64      `json:"updated_at"`
}
