package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// cancelGrace bounds how long an interrupted delegate waits for nekte.task.cancel's answer
// and for the stream's cancelled event.
const cancelGrace = 5 * time.Second

// Task is a task to delegate with nekte.delegate.
type Task struct {
	ID        string          // the caller's task id ("" : one is made up)
	Cap       string          // the capability to run
	Desc      string          // the task's description ("": the capability's id)
	In        json.RawMessage // the capability's input (nil: {})
	TimeoutMS int64           // the task's running time (0: the gateway's default)
	MaxTokens int             // the budget's max_tokens (0: 4096)
	Detail    string          // the budget's detail_level ("": full)
}

// NewTaskID returns a task id for the command line: cli- and 12 hex digits.
func NewTaskID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "cli-" + hex.EncodeToString(b)
}

func (t *Task) params() json.RawMessage {
	if t.ID == "" {
		t.ID = NewTaskID()
	}
	desc := t.Desc
	if desc == "" {
		desc = t.Cap
	}
	in := t.In
	if in == nil {
		in = json.RawMessage(`{}`)
	}
	tokens := t.MaxTokens
	if tokens <= 0 {
		tokens = 4096
	}
	detail := t.Detail
	if detail == "" {
		detail = "full"
	}
	b, _ := json.Marshal(map[string]any{"task": map[string]any{
		"id": t.ID, "desc": desc, "cap": t.Cap, "in": in, "timeout_ms": t.TimeoutMS,
		"budget": map[string]any{"max_tokens": tokens, "detail_level": detail},
	}})
	return b
}

// Renderer shows a task's events as they come.
type Renderer interface {
	// Event shows one event of the stream.
	Event(e Event)
	// Cancelling says a cancel is being sent (the user interrupted).
	Cancelling(taskID string)
	// Close ends the display (err: how the task ended, nil when it completed).
	Close(err error)
}

// Delegate runs task with nekte.delegate over HTTP and hands each event of its stream to
// r. It returns nil when the task completed, the task's error (an *RPCError) when it
// failed or was refused, ErrCancelled when someone else cancelled it. When ctx ends (the
// user pressed Ctrl-C), it sends nekte.task.cancel for the task, waits (at most
// cancelGrace) for the stream's cancelled event, and returns ErrInterrupted.
func (c *Client) Delegate(ctx context.Context, task *Task, r Renderer) error {
	params := task.params()
	return c.follow(ctx, request(1, "nekte.delegate", params), task.ID, true, r)
}

// StreamTask follows the task taskID with nekte.task.stream (its events so far, then the
// live ones) as Delegate does; Ctrl-C stops following and leaves the task alone.
func (c *Client) StreamTask(ctx context.Context, taskID string, r Renderer) error {
	params, _ := json.Marshal(map[string]string{"task_id": taskID})
	return c.follow(ctx, request(1, "nekte.task.stream", params), taskID, false, r)
}

// follow posts body, a call answered by a task's event stream, and hands its events to r;
// when ctx ends it cancels the task first when cancelTask.
func (c *Client) follow(ctx context.Context, body []byte, taskID string, cancelTask bool, r Renderer) (err error) {
	defer func() { r.Close(err) }()
	// The stream is not bound to ctx: on an interrupt it must stay open to show the
	// cancellation the gateway reports.
	streamCtx, stopStream := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStream()
	done := make(chan error, 1)
	events := make(chan Event, 64)
	go func() {
		defer close(events)
		done <- c.stream(streamCtx, body, func(e Event) error {
			select {
			case events <- e:
			case <-streamCtx.Done():
				return streamCtx.Err()
			}
			return nil
		})
	}()
	interrupted := false
	var cancelDeadline <-chan time.Time
	ctxDone := ctx.Done()
	var final *Event
	for {
		select {
		case e, ok := <-events:
			if !ok {
				serr := <-done
				switch {
				case interrupted:
					return ErrInterrupted
				case serr != nil:
					return serr
				case final == nil:
					return &TransportError{Err: errors.New("the task's stream ended before the task did")}
				}
				return finalError(*final)
			}
			r.Event(e)
			if e.Name == EventComplete || e.Name == EventError || e.Name == EventCancelled {
				final = &e
			}
		case <-ctxDone:
			ctxDone = nil
			interrupted = true
			if !cancelTask {
				stopStream()
				continue
			}
			r.Cancelling(taskID)
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelGrace)
			reason, _ := json.Marshal(map[string]string{"task_id": taskID, "reason": "interrupted on the command line"})
			_, cerr := c.callPath(cctx, "/rpc", "nekte.task.cancel", reason)
			cancel()
			if cerr != nil {
				r.Event(Event{Name: "cancel-failed", Data: mustJSON(map[string]string{"error": cerr.Error()})})
				stopStream()
			}
			cancelDeadline = time.After(cancelGrace)
		case <-cancelDeadline:
			stopStream()
		}
	}
}

// ErrCancelled is a task cancelled by someone else.
var ErrCancelled = &RPCError{Code: -32024, Message: "the task was cancelled"}

func finalError(e Event) error {
	switch e.Name {
	case EventComplete:
		return nil
	case EventCancelled:
		return ErrCancelled
	}
	return e.AsError()
}

// stream posts body and hands each event of the answer to fn; an answer that is a plain
// JSON-RPC response (a refusal before the stream started) is returned as its error.
func (c *Client) stream(ctx context.Context, body []byte, fn func(Event) error) error {
	resp, err := c.post(ctx, "/rpc", body, "")
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if !isEventStream(resp) {
		b, err := readBody(ctx, resp)
		if err != nil {
			return err
		}
		var r Response
		if json.Unmarshal(b, &r) != nil || (r.Error == nil && r.Result == nil) {
			return notJSONRPC(resp.StatusCode, b)
		}
		if r.Error != nil {
			return r.Error
		}
		return &TransportError{Status: http.StatusOK, Body: "expected an event stream, got a result: " + abbreviate(string(r.Result))}
	}
	if err := ReadEvents(resp.Body, fn); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &TransportError{Err: err}
	}
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
