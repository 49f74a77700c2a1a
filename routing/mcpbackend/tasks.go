package mcpbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Upstream tasks. An upstream that declares task-augmented tools/call (the tasks
// capability of 2025-11-25, requests.tools.call) may answer a call with a task of its own
// (CreateTaskResult) instead of the result. The bridge then tracks that task: it polls
// tasks/get on the session that created it, at the interval the upstream suggests bounded
// by TasksConfig, relays each status change to the call's progress sink (the gateway
// task's progress), fetches tasks/result once the task has ended, and returns that as the
// call's result — so the caller, and the gateway task the call runs in, see a plain call.
// When the call's context ends (the gateway task is cancelled, suspended or times out)
// the upstream task is cancelled with tasks/cancel.
//
// A tool is called as a task when its definition says execution.taskSupport "required"
// (it cannot be called otherwise), or "optional" and the call runs inside a gateway task
// (WithinTask). Any other call, and every call to an upstream that does not declare task
// support, speaks 2026-07-28 (whose tasks extension is not used) or whose tasks are off
// (tasks.relay: false), is the plain call: the gateway's own task wraps it.

// TasksConfig is an upstream's tasks section.
type TasksConfig struct {
	// Relay calls tools as upstream tasks where the upstream supports them (default true).
	Relay *bool `yaml:"relay" json:"relay,omitempty"`
	// PollMin is the shortest interval between two tasks/get of one upstream task, whatever
	// the upstream suggests (default DefaultTaskPollMin).
	PollMin time.Duration `yaml:"poll_min" json:"poll_min,omitempty"`
	// PollMax is the longest (default DefaultTaskPollMax); it is also the interval when the
	// upstream suggests none, if shorter than DefaultTaskPoll.
	PollMax time.Duration `yaml:"poll_max" json:"poll_max,omitempty"`
}

const (
	// DefaultTaskPollMin is tasks.poll_min's default.
	DefaultTaskPollMin = 100 * time.Millisecond
	// DefaultTaskPollMax is tasks.poll_max's default.
	DefaultTaskPollMax = 5 * time.Second
	// DefaultTaskPoll is the interval used when the upstream suggests none, within
	// [poll_min, poll_max].
	DefaultTaskPoll = time.Second
	// taskCancelTimeout bounds the tasks/cancel sent after the call's context ended.
	taskCancelTimeout = 5 * time.Second
)

func (c TasksConfig) relay() bool { return c.Relay == nil || *c.Relay }

func (c TasksConfig) pollMin() time.Duration {
	if c.PollMin <= 0 {
		return DefaultTaskPollMin
	}
	return c.PollMin
}

func (c TasksConfig) pollMax() time.Duration {
	if c.PollMax <= 0 {
		return DefaultTaskPollMax
	}
	return c.PollMax
}

// interval is the wait before the next tasks/get: the upstream's suggestion (ms, nil for
// none) within [poll_min, poll_max].
func (c TasksConfig) interval(suggested *int64) time.Duration {
	d := DefaultTaskPoll
	if suggested != nil && *suggested > 0 {
		d = time.Duration(min(*suggested, int64(time.Hour/time.Millisecond))) * time.Millisecond
	}
	return min(max(d, c.pollMin()), c.pollMax())
}

// validate refuses negative bounds and poll_min above poll_max.
func (c TasksConfig) validate() error {
	switch {
	case c.PollMin < 0 || c.PollMax < 0:
		return errors.New("tasks: poll_min and poll_max must not be negative (0 or absent: the defaults)")
	case c.pollMin() > c.pollMax():
		return fmt.Errorf("tasks: poll_min (%v) must not exceed poll_max (%v)", c.pollMin(), c.pollMax())
	}
	return nil
}

type withinTaskKey struct{}

// WithinTask marks ctx as the context of a call that runs inside a gateway task: a tool
// whose upstream offers it as an optional task is called as one (upstream tasks).
func WithinTask(ctx context.Context) context.Context {
	return context.WithValue(ctx, withinTaskKey{}, true)
}

func withinTask(ctx context.Context) bool {
	v, _ := ctx.Value(withinTaskKey{}).(bool)
	return v
}

// toolTaskSupport is a tool definition's execution.taskSupport ("" when absent).
func toolTaskSupport(def json.RawMessage) mcp.TaskSupport {
	if !bytes.Contains(def, []byte(`"taskSupport"`)) {
		return ""
	}
	var d struct {
		Execution struct {
			TaskSupport mcp.TaskSupport `json:"taskSupport"`
		} `json:"execution"`
	}
	_ = json.Unmarshal(def, &d)
	return d.Execution.TaskSupport
}

// asTask reports whether the call of route r in ctx goes to the upstream as a task.
func (r *route) asTask(ctx context.Context) bool {
	if !r.up.cfg.Tasks.relay() {
		return false
	}
	switch r.taskSupport {
	case mcp.TaskSupportRequired:
	case mcp.TaskSupportOptional:
		if !withinTask(ctx) {
			return false
		}
	default:
		return false
	}
	s := r.up.pick()
	return s != nil && tasksCapable(s)
}

// tasksCapable reports whether the session's server declared task-augmented tools/call,
// on a handshake revision (2025-11-25): the tasks extension of 2026-07-28 is not used.
func tasksCapable(s *session) bool {
	if mcp.IsModernProtocol(s.version) {
		return false
	}
	t := s.caps.Tasks
	return t != nil && t.Requests != nil && t.Requests.Tools != nil && t.Requests.Tools.Call != nil
}

// createdTask is the task of a CreateTaskResult, or nil when raw is another result.
func createdTask(raw json.RawMessage) *mcp.Task {
	var c struct {
		Task *mcp.Task `json:"task"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Task == nil || c.Task.TaskId == "" {
		return nil
	}
	return c.Task
}

// callToolTask calls tool r as an upstream task and returns its final result.
func (b *Bridge) callToolTask(ctx context.Context, r *route, args json.RawMessage) (json.RawMessage, error) {
	u := r.up
	sink := &statusSink{out: progressFrom(ctx)}
	token := u.newToken()
	u.progress.Store(token, sink.progress)
	defer u.progress.Delete(token)
	// The creating request is not cut short when ctx ends: a task the upstream created
	// meanwhile would be left running, its id unknown. It is cancelled below instead.
	cctx, stop := uncancelled(ctx)
	defer stop()
	var held *session
	x, err := u.do(cctx, func(ctx context.Context, s *session) error {
		held = s
		req := mcp.CallToolRequest{}
		req.Params.Name = r.original
		if args != nil {
			req.Params.Arguments = args
		}
		req.Params.Task = &mcp.TaskParams{}
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
		askLogLevel(ctx, s, &req.Params.Meta)
		_, err := s.cli.CallTool(ctx, req)
		if x := exchangeFrom(ctx); err != nil && x != nil && x.rpcErr == nil && createdTask(x.result) != nil {
			return nil // a CreateTaskResult, which mcp-go cannot read as a CallToolResult
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	task := createdTask(x.result)
	if task == nil {
		return x.result, nil // the upstream answered at once
	}
	if ctx.Err() != nil { // ended while the task was being created
		u.cancelTask(ctx, held, task.TaskId)
		return nil, wrapContext(ctx.Err(), u.cfg.Name)
	}
	u.log.Debug("tracking an upstream task", "tool", r.original, "task_id", task.TaskId)
	return b.trackTask(ctx, u, held, task, sink)
}

// trackTask polls an upstream task until it ends and returns its result; when ctx ends
// first, the task is cancelled upstream.
func (b *Bridge) trackTask(ctx context.Context, u *upstream, s *session, task *mcp.Task, sink *statusSink) (json.RawMessage, error) {
	id := task.TaskId
	for !task.Status.IsTerminal() {
		sink.status(task)
		t := time.NewTimer(u.cfg.Tasks.interval(task.PollInterval))
		select {
		case <-ctx.Done():
			t.Stop()
			u.cancelTask(ctx, s, id)
			return nil, wrapContext(ctx.Err(), u.cfg.Name)
		case <-t.C:
		}
		var got *mcp.GetTaskResult
		_, err := u.doOn(ctx, s, func(ctx context.Context, s *session) error {
			var err error
			got, err = s.cli.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				u.cancelTask(ctx, s, id)
			}
			return nil, err
		}
		task = &got.Task
	}
	sink.status(task)
	if task.Status == mcp.TaskStatusCancelled {
		return nil, gateway.NewError(schemas.CodeCancelled).With("upstream", u.cfg.Name).With("reason", "the upstream cancelled its task")
	}
	x, err := u.doOn(ctx, s, func(ctx context.Context, s *session) error {
		_, err := s.cli.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
		if x := exchangeFrom(ctx); err != nil && x != nil && x.rpcErr == nil && len(x.result) > 0 {
			return nil // a result mcp-go's reading refused: relayed as sent
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return stripRelatedTask(x.result), nil
}

// stripRelatedTask removes the upstream's related-task metadata from a task's result: the
// upstream's task id means nothing to the gateway's caller.
func stripRelatedTask(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(mcp.RelatedTaskMetaKey)) {
		return raw
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(m["_meta"], &meta) != nil {
		return raw
	}
	delete(meta, mcp.RelatedTaskMetaKey)
	if len(meta) == 0 {
		delete(m, "_meta")
	} else {
		m["_meta"], _ = json.Marshal(meta)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// uncancelled is ctx without its cancellation but with its deadline and values.
func uncancelled(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(context.WithoutCancel(ctx), dl)
	}
	return context.WithCancel(context.WithoutCancel(ctx))
}

// cancelTask sends tasks/cancel for an upstream task whose call's context ended, within
// taskCancelTimeout; a failure is logged (the upstream's task ends with its TTL).
func (u *upstream) cancelTask(ctx context.Context, s *session, id string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(taskCancelTimeout, u.cfg.RequestTimeout))
	defer cancel()
	_, err := u.doOn(cctx, s, func(ctx context.Context, s *session) error {
		_, err := s.cli.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: id}})
		return err
	})
	if err != nil {
		u.log.Warn("cancelling an upstream task", "task_id", id, "err", err)
		return
	}
	u.log.Debug("cancelled an upstream task", "task_id", id)
}

// doOn runs one request on session s — the one holding an upstream task — as do runs one
// on any session: under the cap and the request timeout. A session that has died took its
// tasks with it: UNAVAILABLE.
func (u *upstream) doOn(ctx context.Context, s *session, fn func(context.Context, *session) error) (*exchange, error) {
	if s.isDead() {
		return nil, u.unavailable("the session holding the upstream task ended: " + s.deathReason()).NotSent()
	}
	rctx, sl, err := u.bounded(ctx)
	if err != nil {
		return nil, err
	}
	defer sl.end()
	x, err := runOn(ctx, rctx, s, fn)
	if err != nil {
		return nil, u.callError(ctx, rctx, s, err, x)
	}
	return x, nil
}

// statusSink relays an upstream task's progress and status changes to the call's
// progress sink: each status change as a report with the last progress counts seen and a
// message naming the status.
type statusSink struct {
	out func(Progress)

	mu   sync.Mutex
	last Progress
	seen string // the last status and message relayed
}

// progress is the sink of the upstream's notifications/progress for the call.
func (s *statusSink) progress(p Progress) {
	s.mu.Lock()
	s.last = p
	s.mu.Unlock()
	if s.out != nil {
		s.out(p)
	}
}

// status relays task's status when it changed.
func (s *statusSink) status(task *mcp.Task) {
	msg := "upstream task " + string(task.Status)
	if task.StatusMessage != "" {
		msg += ": " + task.StatusMessage
	}
	s.mu.Lock()
	if msg == s.seen {
		s.mu.Unlock()
		return
	}
	s.seen = msg
	p := s.last
	s.mu.Unlock()
	p.Message = msg
	if s.out != nil {
		s.out(p)
	}
}
