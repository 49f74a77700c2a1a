package a2aface

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	rn "github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// getTask serves GetTask.
func (x *exchange) getTask(ctx context.Context) {
	r, err := x.store().get(ctx, x.owner, x.req.Get.ID)
	if err != nil {
		x.writeError(x.req.ID, x.lookupError(err, x.req.Get.ID))
		return
	}
	t, aerr := x.current(ctx, r, true)
	if aerr != nil {
		x.writeError(x.req.ID, aerr)
		return
	}
	x.writeTask(x.trimmed(t, x.req.Get.HistoryLength))
}

// cancelTask serves CancelTask: NEKTE cancels the task (a terminal one is not
// cancelable), and the answer is the task as it stands after.
func (x *exchange) cancelTask(ctx context.Context) {
	id := x.req.Task.ID
	r, err := x.store().get(ctx, x.owner, id)
	if err != nil {
		x.writeError(x.req.ID, x.lookupError(err, id))
		return
	}
	params, _ := json.Marshal(nk.TaskCancelParams{TaskID: r.ID, Reason: "canceled by the A2A client"})
	if out := x.call(ctx, nk.MethodTaskCancel, params); out.Err != nil {
		aerr := fromGateway(out.Err)
		if aerr.Code == a2a.CodeTaskNotCancelable || aerr.Code == a2a.CodeTaskNotFound {
			aerr = aerr.Info(aerr.Reason, "taskId", id)
		}
		x.writeError(x.req.ID, aerr)
		return
	}
	t, aerr := x.current(ctx, r, false)
	if aerr != nil {
		x.writeError(x.req.ID, aerr)
		return
	}
	x.writeTask(x.trimmed(t, nil))
}

// subscribe serves SubscribeToTask: the task as it stands, then its updates until it
// ends. A task that has ended is refused with UnsupportedOperation.
func (x *exchange) subscribe(ctx context.Context) {
	id := x.req.Task.ID
	r, err := x.store().get(ctx, x.owner, id)
	if err != nil {
		x.writeError(x.req.ID, x.lookupError(err, id))
		return
	}
	t, aerr := x.current(ctx, r, false)
	if aerr != nil {
		x.writeError(x.req.ID, aerr)
		return
	}
	if t.Status.State.Terminal() {
		x.writeError(x.req.ID, a2a.UnsupportedOperation("The task has ended: read it with GetTask"))
		return
	}
	params, _ := json.Marshal(map[string]string{"task_id": r.ID})
	out := x.call(ctx, rn.MethodTaskStream, params)
	if out.Err != nil {
		x.writeError(x.req.ID, fromGateway(out.Err))
		return
	}
	s := out.Res.Stream
	if s == nil {
		x.writeError(x.req.ID, a2a.Errf(a2a.CodeInvalidAgentResponse, "The task has no event stream"))
		return
	}
	defer func() { _ = s.Close() }()
	tr := newTracker(r, x.f.now)
	tr.task = t
	es := x.newEventStream()
	task := x.trimmed(t, nil)
	if es.send(a2a.Event{Task: &task}) {
		es.follow(ctx, s, tr)
	}
}

// listTasks serves ListTasks: the caller's tasks, newest first, filtered by context and
// state, a page at a time (the page token is the offset of the next page).
func (x *exchange) listTasks(ctx context.Context) {
	p := x.req.List
	size := x.cfg.PageSize
	if p.PageSize != nil && *p.PageSize > 0 {
		size = min(int(*p.PageSize), x.cfg.MaxPageSize)
	}
	offset, ok := parsePageToken(p.PageToken)
	if !ok {
		x.writeError(x.req.ID, a2a.InvalidParams("pageToken", "is not a token this agent gave"))
		return
	}
	records, err := x.store().list(ctx, x.owner)
	if err != nil {
		x.writeError(x.req.ID, fromGateway(gateway.AsError(err)))
		return
	}
	records = slices.DeleteFunc(records, func(r *record) bool { return p.ContextID != "" && r.ContextID != p.ContextID })
	// Each task's state is NEKTE's, read through the pipeline: only the page's tasks are
	// read, unless the status filter needs every one.
	artifacts := p.IncludeArtifacts != nil && *p.IncludeArtifacts
	var matched []a2a.Task
	total := len(records)
	for i, r := range records {
		if p.Status == "" && (i < offset || i >= offset+size) {
			continue
		}
		t, aerr := x.current(ctx, r, artifacts)
		if aerr != nil {
			if aerr.Code == a2a.CodeTaskNotFound { // its NEKTE record expired first
				continue
			}
			x.writeError(x.req.ID, aerr)
			return
		}
		if p.Status != "" && t.Status.State != p.Status {
			continue
		}
		matched = append(matched, t)
	}
	if p.Status != "" {
		total = len(matched)
		matched = matched[min(offset, len(matched)):min(offset+size, len(matched))]
	}
	res := a2a.ListTasksResponse{TotalSize: int32(min(total, 1<<31-1)), PageSize: int32(size)} //nolint:gosec // bounded on the line
	for _, t := range matched {
		res.Tasks = append(res.Tasks, x.trimmed(t, p.HistoryLength))
	}
	if offset+size < total {
		res.NextPageToken = pageToken(offset + size)
	}
	b, merr := a2a.MarshalList(res, x.req.Version)
	if merr != nil {
		x.writeError(x.req.ID, a2a.Errf(a2a.CodeInternal, "Internal error"))
		return
	}
	x.writeResult(b)
}

func pageToken(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("o" + strconv.Itoa(offset)))
}

func parsePageToken(tok string) (int, bool) {
	if tok == "" {
		return 0, true
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) < 2 || b[0] != 'o' {
		return 0, false
	}
	n, err := strconv.Atoi(string(b[1:]))
	return n, err == nil && n >= 0
}

// statusResult is what the face reads of nekte.task.status.
type statusResult struct {
	Status   nk.TaskStatus `json:"status"`
	Progress rn.Progress   `json:"progress"`
	Error    *struct {
		Code    schemas.Code `json:"code"`
		Message string       `json:"message"`
	} `json:"error"`
}

// current returns the task r as NEKTE has it now; with artifacts, a completed task's
// result is read back from its event log (nekte.task.stream replays it and ends).
func (x *exchange) current(ctx context.Context, r *record, artifacts bool) (a2a.Task, *a2a.Error) {
	params, _ := json.Marshal(nk.TaskStatusParams{TaskID: r.ID})
	out := x.call(ctx, nk.MethodTaskStatus, params)
	if out.Err != nil {
		aerr := fromGateway(out.Err)
		if aerr.Code == a2a.CodeTaskNotFound {
			aerr = a2a.TaskNotFound(r.ID)
		}
		return a2a.Task{}, aerr
	}
	var st statusResult
	if json.Unmarshal(out.Res.Value, &st) != nil {
		return a2a.Task{}, a2a.Errf(a2a.CodeInvalidAgentResponse, "The task's status could not be read")
	}
	tr := newTracker(r, x.f.now)
	var code schemas.Code
	text := ""
	switch {
	case st.Error != nil:
		code, text = st.Error.Code, st.Error.Message
	case st.Status == nk.TaskRunning && (st.Progress.Total > 0 || st.Progress.Message != ""):
		text = progressText(nk.ProgressEvent{Processed: st.Progress.Processed, Total: st.Progress.Total, Message: st.Progress.Message})
	}
	tr.status(stateOf(st.Status, code), text)
	if artifacts && st.Status == nk.TaskCompleted {
		x.replay(ctx, tr)
		tr.task.Status.State = a2a.StateCompleted
	}
	return tr.task, nil
}

// replay reads the task's logged events for its result.
func (x *exchange) replay(ctx context.Context, tr *tracker) {
	params, _ := json.Marshal(map[string]string{"task_id": tr.task.ID})
	out := x.call(ctx, rn.MethodTaskStream, params)
	if out.Err != nil || out.Res.Stream == nil {
		return
	}
	s := out.Res.Stream
	defer func() { _ = s.Close() }()
	status := tr.task.Status
	for {
		msg, err := s.Recv(ctx)
		if err != nil {
			break
		}
		if _, final := tr.apply(msg); final {
			break
		}
	}
	tr.task.Status = status // the status read, not the replay's
}

// lookupError is the error of a task lookup: not found, or the store's failure.
func (x *exchange) lookupError(err error, id string) *a2a.Error {
	if errors.Is(err, errNotFound) {
		return a2a.TaskNotFound(id)
	}
	x.f.log.Error("a2a: reading a task", "trace_id", x.ex.TraceID, "err", err)
	return fromGateway(gateway.AsError(err))
}

// writeTask answers with t.
func (x *exchange) writeTask(t a2a.Task) {
	b, err := a2a.MarshalTask(t, x.req.Version)
	if err != nil {
		x.writeError(x.req.ID, a2a.Errf(a2a.CodeInternal, "Internal error"))
		return
	}
	x.writeResult(b)
}
