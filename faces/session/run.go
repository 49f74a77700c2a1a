package session

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"strconv"
	"strings"
	"sync"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	wire "github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// errorID is the stable errorId of a gateway error: its kind's name in lower case
// ("upstream_unavailable", "deadline_exceeded", …).
func errorID(err *gateway.Error) string {
	if name := schemas.KindOf(err.Code()).Name; name != "" {
		return strings.ToLower(name)
	}
	return "error_" + strconv.Itoa(int(err.Code()))
}

// execute runs r, the running request of s, as one call through the pipeline of the
// configuration in force, and ends it with its one terminal message.
func (f *Face) execute(s *session, r *request) {
	defer s.runs.Done()
	state, msg := f.call(s, r)
	if cause := context.Cause(r.ctx); cause != nil && !errors.Is(cause, context.Canceled) && state != wire.StateDone {
		// Aborted, gone, slow, shutting down, credential ended: that is why it stopped.
		state = wire.StateAborted
		msg = causeMsg(r, cause)
		if errors.Is(cause, errGone) || errors.Is(cause, errSlow) {
			msg = nil // nobody to tell
		}
	}
	s.end(r, state, msg)
}

// call runs r and returns its final state and terminal message.
func (f *Face) call(s *session, r *request) (string, []byte) {
	principal, err := r.principal()
	if err != nil {
		return wire.StateError, causeMsg(r, err)
	}
	rt := f.gw.Acquire()
	defer rt.Release()
	p := rt.Pipeline()
	method := r.route.Method()
	capability := r.route.Capability != nil
	params := r.payload
	if capability {
		params = capabilityParams(r.payload)
	}
	ctx, cancel := context.WithTimeout(r.ctx, s.cfg.RequestTimeout)
	defer cancel()
	ctx, span, traceID := p.Tracer.StartAsCaller(ctx, r.proto, "", method)
	if span != nil {
		defer span.End()
	}
	fail := func(e *gateway.Error) (string, []byte) {
		return wire.StateError, errorMsg(r.id, wire.TypeChatError, r.taskID, errorID(e), e, detail(e, traceID))
	}
	req, derr := jsonrpc.DecodeCall(method, params, false, p.LimitsFor(principal))
	if derr != nil {
		return fail(faces.FromDecodeError(derr))
	}
	dl, _ := ctx.Deadline()
	ex := faces.Exchange{Principal: principal, Zone: gateway.ZoneExternal, Protocol: r.proto,
		Deadline: p.Resolve(dl.UnixMilli()), CallerDeadline: true, TraceID: traceID, Span: span, Method: method,
		KeepStream: !capability}
	if capability {
		return f.capability(ctx, p, &ex, &req, r, fail)
	}
	out := p.Call(ctx, &ex, &req, true)
	if out.Err != nil {
		return fail(out.Err)
	}
	if out.Res.Stream == nil {
		return wire.StateError, broken(r, traceID, "the target returned no stream of frames")
	}
	return f.relay(ctx, out.Res.Stream, r, traceID, fail)
}

// detail is the structured detail of a chat.error: the error's data, its code's name and
// the trace id.
func detail(e *gateway.Error, traceID string) map[string]any {
	d := make(map[string]any, len(e.Data())+2)
	maps.Copy(d, e.Data())
	d["code"] = schemas.KindOf(e.Code()).Name
	d["trace_id"] = traceID
	return d
}

func broken(r *request, traceID, reason string) []byte {
	return errorMsg(r.id, wire.TypeChatError, r.taskID, wire.ErrorInvariantBroken,
		gateway.Errorf(schemas.CodeInternal, "The backend broke the session contract"),
		map[string]any{"reason": reason, "trace_id": traceID})
}

// relay forwards the frames of a session target's stream, each checked against the
// contract, and returns the terminal one.
func (f *Face) relay(ctx context.Context, st gateway.Stream, r *request, traceID string, fail func(*gateway.Error) (string, []byte)) (string, []byte) {
	defer func() { _ = st.Close() }()
	var chk wire.Checker
	lim := wire.Limits{MaxBytes: 16 << 20, MaxDepth: 64, MaxStringBytes: 16 << 20}
	for {
		msg, err := st.Recv(ctx)
		if errors.Is(err, io.EOF) {
			return wire.StateError, broken(r, traceID, "the stream ended without chat.done or chat.error")
		}
		if err != nil {
			return fail(gateway.AsError(err))
		}
		fr, derr := wire.DecodeFrame(msg, lim)
		if derr != nil {
			return wire.StateError, broken(r, traceID, derr.Error())
		}
		terminal, ierr := chk.Check(fr)
		if ierr != nil {
			return wire.StateError, broken(r, traceID, ierr.Reason)
		}
		if terminal {
			state := wire.StateDone
			if fr.Type == wire.TypeChatError {
				state = wire.StateError
			}
			return state, wire.AppendEnvelope(nil, r.id, fr.Type, wire.AppendWithMember(nil, fr.Payload, "taskId", r.taskID))
		}
		if !r.out.send(wire.AppendEnvelope(nil, r.id, wire.TypeChatEvent, fr.Payload)) {
			r.cancel(errSlow)
			return wire.StateAborted, nil
		}
	}
}

// capabilityParams are the params of a capability route's call: the chat.start payload's
// "arguments" (an object or an array) when it has one, else {"message": <message>}.
func capabilityParams(payload []byte) []byte {
	var p struct {
		Message   string          `json:"message"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(payload, &p) // the payload was decoded strictly already
	if len(p.Arguments) > 0 && (p.Arguments[0] == '{' || p.Arguments[0] == '[') {
		return p.Arguments
	}
	out, _ := json.Marshal(map[string]string{"message": p.Message})
	return out
}

// toolCallID is the id of the one tool call a capability request makes.
const toolCallID = "call_1"

// capability runs a capability route's call and adapts its ordinary result: a tool-call
// event before, progress as status events, a tool-result event after, and the result as
// chat.done (text from MCP text content when present, else the JSON result).
func (f *Face) capability(ctx context.Context, p *faces.Pipeline, ex *faces.Exchange, req *jsonrpc.Request, r *request, fail func(*gateway.Error) (string, []byte)) (string, []byte) {
	call := appendEvent(wire.EventToolCall, map[string]any{"id": toolCallID, "name": req.Method, "args": json.RawMessage(req.Params)})
	if !r.out.send(wire.AppendEnvelope(nil, r.id, wire.TypeChatEvent, call)) {
		r.cancel(errSlow)
		return wire.StateAborted, nil
	}
	var mu sync.Mutex
	stopped := false
	ctx = gateway.WithProgress(ctx, func(pr gateway.Progress) {
		ev := map[string]any{"status": "progress", "progress": pr.Progress}
		if pr.Total != nil {
			ev["total"] = *pr.Total
		}
		if pr.Message != "" {
			ev["message"] = pr.Message
		}
		msg := wire.AppendEnvelope(nil, r.id, wire.TypeChatEvent, appendEvent(wire.EventStatus, ev))
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			r.out.offer(msg)
		}
	})
	out := p.Call(ctx, ex, req, true)
	mu.Lock()
	stopped = true
	mu.Unlock()
	var result map[string]any
	if out.Err != nil {
		result = map[string]any{"id": toolCallID, "success": false, "error": map[string]any{
			"errorId": errorID(out.Err), "message": out.Err.Message(), "code": int(out.Err.Code())}}
	} else {
		result = map[string]any{"id": toolCallID, "success": !mcpIsError(out.Res.Value), "result": json.RawMessage(nonNull(out.Res.Value))}
	}
	if !r.out.send(wire.AppendEnvelope(nil, r.id, wire.TypeChatEvent, appendEvent(wire.EventToolResult, result))) {
		r.cancel(errSlow)
		return wire.StateAborted, nil
	}
	if out.Err != nil {
		return fail(out.Err)
	}
	value := nonNull(out.Res.Value)
	text, ok := mcpText(value)
	if !ok {
		text = string(value)
	}
	if mcpIsError(value) {
		return fail(gateway.Errorf(schemas.CodeToolFailed, "The tool reported an error").With("text", text))
	}
	done, _ := json.Marshal(map[string]any{"taskId": r.taskID, "text": text, "result": json.RawMessage(value)})
	return wire.StateDone, wire.AppendEnvelope(nil, r.id, wire.TypeChatDone, done)
}

func nonNull(v []byte) []byte {
	if len(v) == 0 {
		return []byte("null")
	}
	return v
}

// appendEvent returns the event of type typ with members m.
func appendEvent(typ string, m map[string]any) []byte {
	m["type"] = typ
	out, err := json.Marshal(m)
	if err != nil {
		out, _ = json.Marshal(map[string]any{"type": typ})
	}
	return out
}

// mcpContent is what the face reads of an MCP tool result.
type mcpContent struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// mcpText returns the text content of an MCP tool result, false when it has none.
func mcpText(v []byte) (string, bool) {
	var c mcpContent
	if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &c) != nil {
		return "", false
	}
	var b strings.Builder
	found := false
	for _, it := range c.Content {
		if it.Type == "text" {
			b.WriteString(it.Text)
			found = true
		}
	}
	return b.String(), found
}

func mcpIsError(v []byte) bool {
	var c mcpContent
	return len(v) > 0 && v[0] == '{' && json.Unmarshal(v, &c) == nil && c.IsError
}
