package mcpface

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// MCP tasks on the face. A task-augmented tools/call (params.task) is not run by mcp-go:
// the face delegates it to the gateway's task lifecycle — nekte.delegate run through the
// pipeline as the MCP caller, the tool's capability with the call's arguments — and
// answers at once with the task. The task is then one of the NEKTE service's: the same
// state machine, limits (nekte.tasks.*), cancel, progress, receipt and binding to the
// caller's principal, in the shared state store, so any replica answers for it; NEKTE
// callers see it too (nekte.task.status with the same id). tasks/get, tasks/result,
// tasks/list and tasks/cancel (2025-11-25), and tasks/get, tasks/update and tasks/cancel
// (the io.modelcontextprotocol/tasks extension of 2026-07-28) read and move it through
// the pipeline too (nekte.task.status, nekte.task.stream, nekte.task.cancel).
//
// The face keeps, per principal, the tasks it created over MCP (tasksindex.go): it is
// what tasks/list lists, what bounds a caller's MCP tasks (max_per_principal) and how long
// the face answers for one (result_ttl, the task's ttl). A task another principal made is
// not found, as NEKTE's are.

// extensionTasks is the 2026-07-28 extension the face declares in server/discover.
const extensionTasks = "io.modelcontextprotocol/tasks"

// The task methods. tasks/update exists only in the 2026-07-28 extension; tasks/result and
// tasks/list only in 2025-11-25.
const (
	methodTasksGet    = string(mcp.MethodTasksGet)
	methodTasksResult = string(mcp.MethodTasksResult)
	methodTasksList   = string(mcp.MethodTasksList)
	methodTasksCancel = string(mcp.MethodTasksCancel)
	methodTasksUpdate = "tasks/update"
)

// taskBudget asks a delegated task for its full result, whatever its size: the face
// answers tasks/result with the tool's CallToolResult as the upstream sent it.
var taskBudget = json.RawMessage(`{"max_tokens":1073741824,"detail_level":"full"}`)

// Members of the NEKTE params the face sends.
const (
	memberTask   = "task"
	memberTaskID = "task_id"
)

// errDetached ends the delivery of a task's event stream the face no longer follows; the
// task goes on.
var errDetached = gateway.NewError(schemas.CodeCancelled).With("reason", "the MCP face stopped following the task")

// taskFace serves the MCP task methods of the face.
type taskFace struct {
	f     *Face
	index *taskIndex
	poll  time.Duration
	now   func() time.Time

	// ctx ends when the face shuts down: the followers of task streams stop (the tasks
	// go on).
	ctx    context.Context
	stop   context.CancelFunc
	mu     sync.Mutex // guards closed and the adding to wg
	closed bool
	wg     sync.WaitGroup
}

func newTaskFace(f *Face, cfg TasksConfig, kv state.KV, now func() time.Time) *taskFace {
	if now == nil {
		now = time.Now
	}
	ctx, stop := context.WithCancel(context.Background())
	return &taskFace{
		f:     f,
		index: &taskIndex{kv: kv, max: cfg.maxPerPrincipal(), ttl: cfg.resultTTL(), now: now},
		poll:  cfg.pollInterval(),
		now:   now,
		ctx:   ctx,
		stop:  stop,
	}
}

// taskServerOptions are the mcp-go options that declare tasks: the tasks capability of
// 2025-11-25 (list, cancel, tools/call) and the extension of 2026-07-28. The face answers
// every task method itself (serve); mcp-go's own task store is never reached.
func taskServerOptions() []mcpserver.ServerOption {
	return []mcpserver.ServerOption{
		mcpserver.WithTaskCapabilities(true, true, true),
		mcpserver.WithExtensions(map[string]any{extensionTasks: map[string]any{}}),
	}
}

// mark declares that tool may be called as a task: the gateway runs any tool as one of its
// own tasks, whatever the upstream supports.
func (t *taskFace) mark(tool *mcp.Tool) {
	if t == nil {
		return
	}
	if tool.Execution == nil {
		tool.Execution = &mcp.ToolExecution{}
	}
	tool.Execution.TaskSupport = mcp.TaskSupportOptional
}

// close stops following task streams and waits for the followers to end.
func (t *taskFace) close() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.stop()
	t.wg.Wait()
}

// taskRequest is a request the task code serves.
type taskRequest struct {
	id     jsonrpc.ID
	method string
	modern bool   // 2026-07-28
	sid    string // the 2025-11-25 session, "" on 2026-07-28
	p      taskParams
}

// taskParams are the params members the task methods read.
type taskParams struct {
	Name      string                     `json:"name"`
	Arguments json.RawMessage            `json:"arguments"`
	Task      *mcp.TaskParams            `json:"task"`
	TaskID    string                     `json:"taskId"`
	Cursor    *string                    `json:"cursor"`
	Meta      map[string]json.RawMessage `json:"_meta"`
}

// classify reports whether body is a request the task code serves: a tools/call with
// params.task, or a task method. Anything else — a notification, a batch, a body mcp-go
// must refuse — is left to the rest of the face.
func classify(h http.Header, body []byte, lim jsonrpc.Limits) (taskRequest, bool) {
	if !mayBeTask(body) {
		return taskRequest{}, false
	}
	p, derr := jsonrpc.Decode(body, lim)
	if derr != nil || p.Batch || p.Members[0].Err != nil {
		return taskRequest{}, false
	}
	req := p.Members[0].Request
	if req.ID.IsZero() {
		return taskRequest{}, false
	}
	tr := taskRequest{id: req.ID, method: req.Method}
	if len(req.Params) > 0 && json.Unmarshal(req.Params, &tr.p) != nil {
		return taskRequest{}, false // mcp-go answers the malformed params
	}
	switch req.Method {
	case methodTasksGet, methodTasksResult, methodTasksList, methodTasksCancel, methodTasksUpdate:
	case string(mcp.MethodToolsCall):
		if tr.p.Task == nil {
			return taskRequest{}, false
		}
	default:
		return taskRequest{}, false
	}
	tr.modern = mcp.IsModernProtocol(h.Get(headerVersion))
	if v, ok := tr.p.Meta[mcp.MetaKeyProtocolVersion]; ok {
		var s string
		tr.modern = tr.modern || (json.Unmarshal(v, &s) == nil && mcp.IsModernProtocol(s))
	}
	if !tr.modern {
		tr.sid = h.Get(mcpserver.HeaderKeySessionID)
	}
	return tr, true
}

// mayBeTask is classify's cheap first look: a body that names neither a task method nor
// a task member is none of them.
func mayBeTask(body []byte) bool {
	return bytes.Contains(body, []byte(`"tasks/`)) || bytes.Contains(body, []byte(`"task"`))
}

// serve answers r when it is a task request (classify) and reports whether it did. A
// 2025-11-25 request must name a session the face checked; without one it is left to
// mcp-go, which refuses it.
func (t *taskFace) serve(w http.ResponseWriter, r *http.Request, fr *faceRequest) bool {
	if !mayBeTask(fr.body) {
		return false
	}
	ctx := r.Context()
	principal, _ := ctx.Value(principalKey{}).(gateway.Principal)
	rt := t.f.gw.Acquire()
	lim := rt.Pipeline().LimitsFor(principal)
	rt.Release()
	tr, ok := classify(r.Header, fr.body, lim)
	if !ok || (!tr.modern && (tr.sid == "" || !fr.sessionChecked)) {
		return false
	}
	who := faces.Caller{Principal: principal, Zone: callerZone(ctx), Protocol: gateway.ProtocolMCP}
	result, err := t.dispatch(ctx, who, &tr)
	writeTaskResponse(w, tr.id, result, err)
	return true
}

// dispatch runs one task request and returns its result's JSON.
func (t *taskFace) dispatch(ctx context.Context, who faces.Caller, tr *taskRequest) (json.RawMessage, error) {
	switch {
	case tr.method == string(mcp.MethodToolsCall):
		return t.create(ctx, who, tr)
	case tr.method == methodTasksUpdate && !tr.modern,
		(tr.method == methodTasksResult || tr.method == methodTasksList) && tr.modern:
		return nil, errNotInRevision(tr.method, tr.modern)
	case tr.method == methodTasksList:
		return t.list(ctx, who, tr)
	}
	if tr.p.TaskID == "" {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "params.taskId is required").With("field", "taskId")
	}
	entry, err := t.lookup(ctx, who, tr.p.TaskID)
	if err != nil {
		return nil, err
	}
	switch tr.method {
	case methodTasksGet:
		return t.get(ctx, who, tr, entry)
	case methodTasksResult:
		return t.result(ctx, who, entry)
	case methodTasksCancel:
		return t.cancel(ctx, who, tr, entry)
	default: // tasks/update
		return nil, gateway.Errorf(schemas.CodeInvalidParams,
			"Task %s is not waiting for input: the gateway's tasks never ask for it, so tasks/update has nothing to update", entry.ID).
			With("field", "taskId")
	}
}

// errNotInRevision refuses a task method the caller's protocol revision does not have.
func errNotInRevision(method string, modern bool) *gateway.Error {
	if modern {
		return gateway.Errorf(schemas.CodeMethodNotFound, "Method not found: %s is not part of the tasks extension of protocol 2026-07-28", method)
	}
	return gateway.Errorf(schemas.CodeMethodNotFound, "Method not found: %s exists only in the tasks extension of protocol 2026-07-28", method)
}

// errTaskNotFound is a task id the caller has no task of (MCP: invalid params).
func errTaskNotFound(id string) *gateway.Error {
	return gateway.Errorf(schemas.CodeInvalidParams, "Task not found: %s", id).With("field", "taskId")
}

// lookup returns the caller's MCP task id.
func (t *taskFace) lookup(ctx context.Context, who faces.Caller, id string) (indexedTask, error) {
	entry, ok, err := t.index.get(ctx, who.Principal.Owner(), id)
	switch {
	case err != nil:
		return entry, gateway.NewError(schemas.CodeUnavailable).With("reason", "the task store is unavailable").Wrap(err)
	case !ok:
		return entry, errTaskNotFound(id)
	}
	return entry, nil
}

// newTaskID draws a task id: 128 random bits.
func newTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "mcp-" + base64.RawURLEncoding.EncodeToString(b[:])
}

// delegateParams is nekte.delegate's params for a tools/call of tool with args.
func delegateParams(id, tool string, args json.RawMessage) ([]byte, error) {
	if a := bytes.TrimSpace(args); len(a) == 0 || bytes.Equal(a, []byte("null")) {
		args = json.RawMessage("{}")
	}
	return json.Marshal(map[string]any{memberTask: map[string]any{
		"id": id, "desc": "MCP tools/call " + tool, "cap": tool, "in": args, "budget": taskBudget,
	}})
}

// create runs a task-augmented tools/call as a gateway task and answers with the task.
func (t *taskFace) create(ctx context.Context, who faces.Caller, tr *taskRequest) (json.RawMessage, error) {
	if tr.p.Name == "" {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "params.name is required").With("field", "name")
	}
	now := t.now()
	entry := indexedTask{ID: newTaskID(), Created: now.UnixMilli()}
	var requested *int64
	if tr.p.Task != nil {
		requested = tr.p.Task.TTL
	}
	entry.Expires = entry.Created + t.index.ttlFor(requested).Milliseconds()
	entry.Progress = tr.p.Meta["progressToken"]
	params, err := delegateParams(entry.ID, tr.p.Name, tr.p.Arguments)
	if err != nil {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "params.arguments is not JSON").With("field", "arguments")
	}
	owner := who.Principal.Owner()
	if err := t.index.add(ctx, owner, entry); err != nil {
		if ge, ok := errors.AsType[*gateway.Error](err); ok {
			return nil, ge
		}
		return nil, gateway.NewError(schemas.CodeUnavailable).With("reason", "the task store is unavailable").Wrap(err)
	}
	started := make(chan *gateway.Error, 1)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = t.index.remove(context.WithoutCancel(ctx), owner, entry.ID)
		return nil, gateway.ShutdownError()
	}
	t.wg.Add(1)
	t.mu.Unlock()
	race := &atomic.Int32{} // raceWaiting, then raceStarted (follow) or raceAbandoned (here)
	go t.follow(ctx, who, tr, entry, params, started, race)
	var gerr *gateway.Error
	select {
	case gerr = <-started:
	case <-ctx.Done():
		if race.CompareAndSwap(raceWaiting, raceAbandoned) {
			// The caller went away before the task started: none is left behind (follow
			// cancels it if it starts still).
			gerr = gateway.NewError(schemas.CodeCancelled)
		} else {
			gerr = <-started // it started: answered as usual, for whoever still listens
		}
	}
	if gerr != nil {
		_ = t.index.remove(context.WithoutCancel(ctx), owner, entry.ID)
		return nil, gerr
	}
	task := t.taskOf(entry, statusView{Status: string(nk.TaskAccepted), CreatedAt: entry.Created, UpdatedAt: now.UnixMilli()})
	out := map[string]any{memberTask: task}
	if tr.modern {
		out["resultType"] = "task"
	}
	return json.Marshal(out)
}

// follow runs the task's delegate call, whose result is the task's event stream. Its
// first event tells create the task runs (started gets nil; a refusal before the stream
// started is sent instead). On 2025-11-25 it then relays the task's status changes to the
// creating session as notifications/tasks/status, and its progress as
// notifications/progress under the call's progress token, until the task ends, the
// call's deadline passes or the face shuts down; on 2026-07-28, which has no
// notifications, it stops at once. The task goes on either way — unless create gave up
// waiting first (its caller went away), when the task just started is cancelled.
func (t *taskFace) follow(reqCtx context.Context, who faces.Caller, tr *taskRequest, entry indexedTask, params []byte,
	started chan<- *gateway.Error, race *atomic.Int32) {
	defer t.wg.Done()
	ctx, cancel := context.WithCancel(context.WithoutCancel(reqCtx))
	defer cancel()
	stop := context.AfterFunc(t.ctx, cancel)
	defer stop()
	signalled := false
	send := func(msg []byte) error {
		if !signalled {
			signalled = true
			if !race.CompareAndSwap(raceWaiting, raceStarted) {
				t.abandon(ctx, who, entry.ID)
				return errDetached
			}
			started <- nil
		}
		if tr.sid == "" {
			return errDetached
		}
		t.relay(tr.sid, entry, msg)
		return nil
	}
	rt := t.f.gw.Acquire()
	inv := rt.Pipeline().RunAs(ctx, who, nk.MethodDelegate, params, send)
	rt.Release()
	if !signalled && race.CompareAndSwap(raceWaiting, raceStarted) {
		if inv.Err == nil {
			inv.Err = gateway.NewError(schemas.CodeInternal).With("reason", "the task's stream ended before it started")
		}
		started <- inv.Err
	}
}

// The states of the race between create giving up and follow seeing the task start.
const (
	raceWaiting int32 = iota
	raceStarted
	raceAbandoned
)

// abandon cancels a task whose creator went away before it was told of it.
func (t *taskFace) abandon(ctx context.Context, who faces.Caller, id string) {
	params, _ := json.Marshal(map[string]string{memberTaskID: id, "reason": "the MCP caller went away before the task was answered"})
	rt := t.f.gw.Acquire()
	inv := rt.Pipeline().RunAs(ctx, who, nk.MethodTaskCancel, params, nil)
	rt.Release()
	if inv.Err != nil {
		t.f.log.Debug("cancelling an abandoned MCP task", "task_id", id, "err", inv.Err)
	}
}

// taskEvent is one message of a task's event stream.
type taskEvent struct {
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// relay sends one event of a task's stream to the creating session: a status change as
// notifications/tasks/status, progress as notifications/progress under the call's
// progress token.
func (t *taskFace) relay(sid string, entry indexedTask, msg []byte) {
	var ev taskEvent
	var sc nk.StatusChangeEvent
	var p nk.ProgressEvent
	switch {
	case json.Unmarshal(msg, &ev) != nil:
	case ev.Event == nk.EventStatusChange && json.Unmarshal(ev.Data, &sc) == nil:
		if sc.From == nk.TaskPending && sc.To == nk.TaskAccepted {
			return // create answered with it
		}
		view := statusView{Status: string(sc.To), CreatedAt: entry.Created, UpdatedAt: t.now().UnixMilli()}
		if sc.To == nk.TaskFailed || sc.To == nk.TaskCancelled || sc.To == nk.TaskSuspended {
			view.Reason = sc.Reason
		}
		t.notify(sid, string(mcp.MethodNotificationTasksStatus), taskMap(t.taskOf(entry, view)))
	case ev.Event == nk.EventProgress && len(entry.Progress) > 0 && json.Unmarshal(ev.Data, &p) == nil:
		var total *int
		if p.Total > 0 {
			total = &p.Total
		}
		t.notify(sid, string(mcp.MethodNotificationProgress), progressParams(entry.Progress, p.Processed, total, p.Message))
	}
}

// notify sends a notification to the creating session: on its GET stream, here or on the
// replica holding it (relay25.go), which nothing else reads from; without one, through
// mcp-go's session queue, which the session's next stream drains. A session mcp-go does
// not hold (yet) misses it; the following goes on until the task ends.
func (t *taskFace) notify(sid, method string, params map[string]any) {
	if t.f.relay != nil {
		msg, err := json.Marshal(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
			Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}}})
		if err == nil && t.f.relay.deliver(t.ctx, sid, nil, msg) == nil {
			return
		}
	}
	if err := t.f.srv.SendNotificationToSpecificClient(sid, method, params); err != nil {
		t.f.log.Debug("relaying an MCP task's event", "method", method, "err", err)
		return
	}
	t.f.markStream(sid) // mcp-go answers the session's later POSTs as event streams
}

// statusView is nekte.task.status's result, as the face reads it.
type statusView struct {
	Status    string `json:"status"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
	Progress  struct {
		Message string `json:"message"`
	} `json:"progress"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Reason string `json:"-"`
}

// mcpStatus maps a gateway task status to MCP's: the states before and while running, and
// suspended (a drain or a lost runner; resumed with nekte.task.resume), are working.
func mcpStatus(s string) mcp.TaskStatus {
	switch nk.TaskStatus(s) {
	case nk.TaskCompleted:
		return mcp.TaskStatusCompleted
	case nk.TaskFailed:
		return mcp.TaskStatusFailed
	case nk.TaskCancelled:
		return mcp.TaskStatusCancelled
	default:
		return mcp.TaskStatusWorking
	}
}

// taskOf is the MCP task of an indexed task in the state v.
func (t *taskFace) taskOf(entry indexedTask, v statusView) mcp.Task {
	ttl, poll := entry.ttlMs(), t.poll.Milliseconds()
	task := mcp.Task{
		TaskId:        entry.ID,
		Status:        mcpStatus(v.Status),
		CreatedAt:     rfc3339(entry.Created),
		LastUpdatedAt: rfc3339(max(v.UpdatedAt, entry.Created)),
		TTL:           &ttl,
	}
	if !task.Status.IsTerminal() {
		task.PollInterval = &poll
	}
	switch {
	case v.Error != nil:
		task.StatusMessage = v.Error.Message
	case nk.TaskStatus(v.Status) == nk.TaskSuspended:
		task.StatusMessage = "suspended: resume it with nekte.task.resume"
	case v.Reason != "":
		task.StatusMessage = v.Reason
	case v.Progress.Message != "" && !task.Status.IsTerminal():
		task.StatusMessage = v.Progress.Message
	}
	return task
}

func rfc3339(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

// taskMap is a task as notification params.
func taskMap(task mcp.Task) map[string]any {
	b, _ := json.Marshal(task)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// status reads a task's status through the pipeline (nekte.task.status).
func (t *taskFace) status(ctx context.Context, who faces.Caller, id string) (statusView, error) {
	params, _ := json.Marshal(map[string]string{memberTaskID: id})
	rt := t.f.gw.Acquire()
	inv := rt.Pipeline().RunAs(ctx, who, nk.MethodTaskStatus, params, nil)
	rt.Release()
	var v statusView
	switch {
	case inv.Err != nil && inv.Err.Code() == schemas.CodeTaskNotFound:
		return v, errTaskNotFound(id)
	case inv.Err != nil:
		return v, inv.Err
	case json.Unmarshal(inv.Result, &v) != nil:
		return v, gateway.NewError(schemas.CodeInternal).With("reason", "unreadable task status")
	}
	return v, nil
}

// get answers tasks/get: the task; on 2026-07-28, a task that ended carries its result
// (result), as tasks/result would have answered it, since that revision has no
// tasks/result.
func (t *taskFace) get(ctx context.Context, who faces.Caller, tr *taskRequest, entry indexedTask) (json.RawMessage, error) {
	v, err := t.status(ctx, who, entry.ID)
	if err != nil {
		return nil, err
	}
	task := t.taskOf(entry, v)
	if !tr.modern {
		return json.Marshal(task)
	}
	out := taskMap(task)
	out["resultType"] = "complete"
	if task.Status.IsTerminal() {
		res, err := t.outcome(ctx, who, entry)
		if err != nil {
			ge := gateway.AsError(err)
			out["error"] = map[string]any{"code": ge.Code(), "message": ge.Message()}
		} else {
			out["result"] = res
		}
	}
	return json.Marshal(out)
}

// result answers tasks/result: it waits until the task ends (within the request's
// deadline) and answers what the tools/call would have: the tool's CallToolResult, with
// the related-task metadata.
func (t *taskFace) result(ctx context.Context, who faces.Caller, entry indexedTask) (json.RawMessage, error) {
	res, err := t.outcome(ctx, who, entry)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(res, &m); err != nil || m == nil {
		return res, nil //nolint:nilerr // not an object: relayed as it is
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := m["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
	}
	meta[mcp.RelatedTaskMetaKey], _ = json.Marshal(mcp.RelatedTaskMeta(entry.ID))
	m["_meta"], _ = json.Marshal(meta)
	return json.Marshal(m)
}

// outcome follows the task's stream (nekte.task.stream) to its final event and turns it
// into the tool call's answer: complete → the CallToolResult (the full level, which is the
// result as the upstream sent it); a failed tool (TASK_FAILED) → a CallToolResult with
// isError and the failure; a timeout → its error; cancelled → CANCELLED.
func (t *taskFace) outcome(ctx context.Context, who faces.Caller, entry indexedTask) (json.RawMessage, error) {
	params, _ := json.Marshal(map[string]string{memberTaskID: entry.ID})
	var last taskEvent
	send := func(msg []byte) error {
		var ev taskEvent
		if json.Unmarshal(msg, &ev) == nil {
			switch ev.Event {
			case nk.EventComplete, nk.EventError, nk.EventCancelled:
				last = ev
			}
		}
		return nil
	}
	rt := t.f.gw.Acquire()
	inv := rt.Pipeline().RunAs(ctx, who, methodTaskStream, params, send)
	rt.Release()
	if last.Event == "" {
		if inv.Err != nil && inv.Err.Code() == schemas.CodeTaskNotFound {
			return nil, errTaskNotFound(entry.ID)
		}
		if inv.Err != nil {
			return nil, inv.Err
		}
		return nil, gateway.NewError(schemas.CodeInternal).With("reason", "the task's stream ended without its outcome")
	}
	return finalResult(last)
}

// methodTaskStream is NEKTE's re-attach method (routing/nekte.MethodTaskStream; the face
// does not import routing/nekte).
const methodTaskStream = "nekte.task.stream"

// finalResult turns a task's final event into tasks/result's answer.
func finalResult(ev taskEvent) (json.RawMessage, error) {
	switch ev.Event {
	case nk.EventComplete:
		var c struct {
			Out struct {
				Minimal string          `json:"minimal"`
				Compact json.RawMessage `json:"compact"`
				Full    json.RawMessage `json:"full"`
			} `json:"out"`
		}
		if json.Unmarshal(ev.Data, &c) != nil {
			return nil, gateway.NewError(schemas.CodeInternal).With("reason", "unreadable complete event")
		}
		if len(c.Out.Full) > 0 && c.Out.Full[0] == '{' {
			return c.Out.Full, nil
		}
		// The log keeps only the minimal level of a result larger than
		// nekte.tasks.max_event_bytes, and none of a derive: false one.
		return textResult(c.Out.Minimal, false), nil
	case nk.EventError:
		var e nk.ErrorEvent
		if json.Unmarshal(ev.Data, &e) != nil {
			return nil, gateway.NewError(schemas.CodeInternal).With("reason", "unreadable error event")
		}
		if e.Code == schemas.CodeTaskFailed {
			return textResult(e.Message, true), nil
		}
		return nil, gateway.Errorf(e.Code, "%s", e.Message)
	default:
		return nil, gateway.Errorf(schemas.CodeCancelled, "Task cancelled")
	}
}

// textResult is a CallToolResult of one text.
func textResult(text string, isError bool) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": isError})
	return b
}

// list answers tasks/list with the caller's MCP tasks, oldest first: all of them (at most
// max_per_principal), in one page.
func (t *taskFace) list(ctx context.Context, who faces.Caller, tr *taskRequest) (json.RawMessage, error) {
	if tr.p.Cursor != nil && *tr.p.Cursor != "" {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "Invalid cursor: tasks/list answers in one page").With("field", "cursor")
	}
	entries, err := t.index.list(ctx, who.Principal.Owner())
	if err != nil {
		return nil, gateway.NewError(schemas.CodeUnavailable).With("reason", "the task store is unavailable").Wrap(err)
	}
	tasks := make([]mcp.Task, 0, len(entries))
	for _, e := range entries {
		v, err := t.status(ctx, who, e.ID)
		if isTaskNotFound(err) {
			continue // its record expired before its entry
		}
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, t.taskOf(e, v))
	}
	return json.Marshal(map[string]any{"tasks": tasks})
}

// isTaskNotFound reports whether err is errTaskNotFound's.
func isTaskNotFound(err error) bool {
	ge, ok := errors.AsType[*gateway.Error](err)
	return ok && ge.Code() == schemas.CodeInvalidParams && ge.Data()["field"] == "taskId"
}

// cancel answers tasks/cancel: the task is cancelled (nekte.task.cancel: its backend call
// too, at once here or within nekte.tasks.poll_interval on another replica) and answered
// in its new state. A task that has ended cannot be cancelled (invalid params).
func (t *taskFace) cancel(ctx context.Context, who faces.Caller, tr *taskRequest, entry indexedTask) (json.RawMessage, error) {
	params, _ := json.Marshal(map[string]string{memberTaskID: entry.ID, "reason": "cancelled over MCP"})
	rt := t.f.gw.Acquire()
	inv := rt.Pipeline().RunAs(ctx, who, nk.MethodTaskCancel, params, nil)
	rt.Release()
	if inv.Err != nil {
		switch inv.Err.Code() {
		case schemas.CodeTaskNotFound:
			return nil, errTaskNotFound(entry.ID)
		case schemas.CodeTaskNotCancellable:
			return nil, gateway.Errorf(schemas.CodeInvalidParams, "Cannot cancel task %s: it has already ended", entry.ID).With("field", "taskId")
		}
		return nil, inv.Err
	}
	return t.get(ctx, who, &taskRequest{modern: tr.modern}, entry)
}

// writeTaskResponse writes a task request's JSON-RPC response.
func writeTaskResponse(w http.ResponseWriter, id jsonrpc.ID, result json.RawMessage, err error) {
	var body []byte
	if err != nil {
		ge := gateway.AsError(err)
		var data []byte
		if d := ge.Data(); len(d) > 0 {
			data, _ = json.Marshal(d)
		}
		body = jsonrpc.AppendError(nil, id, ge.Code(), ge.Message(), data)
	} else {
		body = jsonrpc.AppendResult(nil, id, result)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n')) //nolint:gosec // a JSON envelope encoded here, served as application/json with nosniff
}
