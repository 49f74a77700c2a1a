package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonnames"
	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Limits bound what DecodeRequest accepts; every field must be positive.
type Limits struct {
	// MaxBytes bounds the body.
	MaxBytes int64
	// MaxDepth bounds the nesting of objects and arrays (the envelope is 1).
	MaxDepth int
	// MaxStringBytes bounds every string, member names included.
	MaxStringBytes int
	// MaxParts bounds the parts of a message.
	MaxParts int
}

// DefaultLimits are the limits of a face configured with none of its own.
var DefaultLimits = Limits{MaxBytes: 256 << 10, MaxDepth: 32, MaxStringBytes: 128 << 10, MaxParts: 64}

// MaxIDBytes bounds a task, context, message or push-config id.
const MaxIDBytes = 128

// Request is a decoded request: its operation and the params of that operation (exactly
// one of the params fields is set, matching Op).
type Request struct {
	ID     jsonrpc.ID
	Method string
	Op     Op
	// Version is the version the request was read in.
	Version Version

	Send   *SendMessageRequest
	Get    *GetTaskRequest
	List   *ListTasksRequest
	Task   *TaskIDRequest
	Push   *PushConfigRequest
	Card   *ExtendedCardRequest
	NoArgs bool
}

// DecodeRequest decodes one JSON-RPC request of version v strictly (see the package
// comment). On failure the error's id is the request's when it could be read. A method
// that v does not name is CodeMethodNotFound, even when the other version names it: the
// caller decides (IsV03Method) whether that deserves a version error instead.
func DecodeRequest(body []byte, v Version, lim Limits) (Request, jsonrpc.ID, *Error) {
	if int64(len(body)) > lim.MaxBytes {
		return Request{}, jsonrpc.ID{}, Errf(CodeInvalidRequest, "Request payload validation error").At("", "the body is larger than "+strconv.FormatInt(lim.MaxBytes, 10)+" bytes")
	}
	payload, derr := jsonrpc.Decode(body, jsonrpc.Limits{MaxDepth: lim.MaxDepth, MaxStringBytes: lim.MaxStringBytes, MaxBatch: 1})
	if derr != nil {
		return Request{}, derr.ID, fromDecodeError(derr)
	}
	if payload.Batch {
		return Request{}, jsonrpc.ID{}, Errf(CodeInvalidRequest, "Request payload validation error").At("", "batches are not part of the A2A binding")
	}
	m := payload.Members[0]
	if m.Err != nil {
		return Request{}, m.Err.ID, fromDecodeError(m.Err)
	}
	req := Request{ID: m.Request.ID, Method: m.Request.Method, Version: v, Op: OpOf(v, m.Request.Method)}
	if req.ID.IsZero() {
		return req, req.ID, Errf(CodeInvalidRequest, "Request payload validation error").At("id", "notifications are not part of the A2A binding")
	}
	if req.Op == OpUnknown {
		return req, req.ID, Errf(CodeMethodNotFound, "Method not found").Info("METHOD_NOT_FOUND", "version", v.String())
	}
	if err := req.decodeParams(m.Request.Params, lim); err != nil {
		return req, req.ID, err
	}
	return req, req.ID, nil
}

func fromDecodeError(d *jsonrpc.DecodeError) *Error {
	switch d.Code {
	case schemas.CodeParseError:
		return Errf(CodeParseError, "Invalid JSON payload")
	case schemas.CodeInvalidParams:
		return InvalidParams("", d.Reason)
	}
	e := Errf(CodeInvalidRequest, "Request payload validation error").At("", d.Reason)
	if d.Limit != "" {
		return e.Info("LIMIT_EXCEEDED", "limit", d.Limit, "max", strconv.Itoa(d.Max))
	}
	return e
}

// decodeParams reads params into the op's params type and validates them.
func (r *Request) decodeParams(params []byte, lim Limits) *Error {
	switch r.Op {
	case OpSendMessage, OpSendStreamingMessage:
		r.Send = new(SendMessageRequest)
		if err := decodeInto(params, r.Send); err != nil {
			return err
		}
		return r.Send.validate(r.Version, lim)
	case OpGetTask:
		r.Get = new(GetTaskRequest)
		if err := decodeInto(params, r.Get); err != nil {
			return err
		}
		return checkTaskID("id", r.Get.ID, validHistory(r.Get.HistoryLength))
	case OpListTasks:
		r.List = new(ListTasksRequest)
		if err := decodeInto(params, r.List); err != nil {
			return err
		}
		return r.List.validate(r.Version)
	case OpCancelTask, OpSubscribeToTask:
		r.Task = new(TaskIDRequest)
		if err := decodeInto(params, r.Task); err != nil {
			return err
		}
		return checkTaskID("id", r.Task.ID, nil)
	case OpCreatePushConfig, OpGetPushConfig, OpListPushConfigs, OpDeletePushConfig:
		r.Push = new(PushConfigRequest)
		return decodeInto(params, r.Push)
	case OpGetExtendedCard:
		r.Card = new(ExtendedCardRequest)
		return decodeInto(params, r.Card)
	}
	return Errf(CodeMethodNotFound, "Method not found")
}

// decodeInto reads params (an object; absent reads as {}) into p with case-sensitive names.
func decodeInto(params []byte, p any) *Error {
	params = bytes.TrimSpace(params)
	if len(params) == 0 {
		params = []byte("{}")
	}
	if params[0] != '{' {
		return InvalidParams("", "params must be an object")
	}
	// Case-sensitive member names (codecs/jsonnames): "ID" must not fill id.
	if pr := jsonnames.Check(params, reflect.TypeOf(p)); pr != nil {
		return InvalidParams(pr.Path, pr.Reason)
	}
	if err := json.Unmarshal(params, p); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return InvalidParams(te.Field, "has the wrong type")
		}
		return InvalidParams("", "must be valid JSON of the operation's params")
	}
	return nil
}

func checkTaskID(field, id string, then *Error) *Error {
	switch {
	case id == "":
		return InvalidParams(field, "is required")
	case len(id) > MaxIDBytes:
		return InvalidParams(field, "must be at most "+strconv.Itoa(MaxIDBytes)+" bytes")
	}
	return then
}

func validHistory(n *int32) *Error {
	if n != nil && *n < 0 {
		return InvalidParams("historyLength", "must not be negative")
	}
	return nil
}

func (p *SendMessageRequest) validate(v Version, lim Limits) *Error {
	m := p.Message
	if m == nil {
		return InvalidParams("message", "is required")
	}
	if p.Configuration != nil {
		if err := validHistory(p.Configuration.HistoryLength); err != nil {
			return err.At("configuration.historyLength", "must not be negative")
		}
	}
	return m.normalize(v, lim)
}

// normalize checks a client's message and rewrites its 0.3 spellings into 1.0's.
func (m *Message) normalize(v Version, lim Limits) *Error {
	switch {
	case m.MessageID == "":
		return InvalidParams("message.messageId", "is required")
	case len(m.MessageID) > MaxIDBytes || len(m.ContextID) > MaxIDBytes || len(m.TaskID) > MaxIDBytes:
		return InvalidParams("message", "ids must be at most "+strconv.Itoa(MaxIDBytes)+" bytes")
	case len(m.Parts) == 0:
		return InvalidParams("message.parts", "at least one part is required")
	case len(m.Parts) > lim.MaxParts:
		return InvalidParams("message.parts", "at most "+strconv.Itoa(lim.MaxParts)+" parts")
	}
	if err := m.normalizeRole(v); err != nil {
		return err
	}
	if v == V03 {
		if m.Kind != "" && m.Kind != "message" {
			return InvalidParams("message.kind", `must be "message"`)
		}
		m.Kind = ""
	}
	for i := range m.Parts {
		if err := m.Parts[i].normalize(v, "message.parts["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	return nil
}

func (m *Message) normalizeRole(v Version) *Error {
	want := RoleUser
	if v == V03 {
		switch m.Role {
		case "user":
			m.Role = RoleUser
		case "agent":
			m.Role = RoleAgent
		default:
			return InvalidParams("message.role", `must be "user"`)
		}
	}
	if m.Role != want {
		return InvalidParams("message.role", "must be "+string(want))
	}
	return nil
}

// normalize checks a part and rewrites a 0.3 part (kind, file) into the 1.0 members.
func (p *Part) normalize(v Version, field string) *Error {
	if v == V03 {
		if err := p.fromV03(field); err != nil {
			return err
		}
	}
	n := 0
	if p.Text != nil {
		n++
	}
	if len(p.Raw) > 0 { // an empty raw is what omitempty leaves out: no content
		n++
	}
	if p.URL != "" {
		n++
	}
	if len(p.Data) > 0 && string(p.Data) != "null" {
		n++
	}
	if n != 1 {
		return InvalidParams(field, "must hold exactly one of text, raw, url and data")
	}
	return nil
}

func (p *Part) fromV03(field string) *Error {
	switch p.Kind {
	case "text":
		if p.Text == nil {
			return InvalidParams(field+".text", "is required")
		}
	case "data":
		if len(p.Data) == 0 {
			return InvalidParams(field+".data", "is required")
		}
	case "file":
		f := p.File
		if f == nil {
			return InvalidParams(field+".file", "is required")
		}
		p.Filename, p.MediaType = f.Name, f.MimeType
		switch {
		case f.Bytes != "" && f.URI == "":
			raw, err := decodeBase64(f.Bytes)
			if err != nil || len(raw) == 0 {
				return InvalidParams(field+".file.bytes", "must be non-empty base64")
			}
			p.Raw = raw
		case f.URI != "" && f.Bytes == "":
			p.URL = f.URI
		default:
			return InvalidParams(field+".file", "must hold exactly one of bytes and uri")
		}
	default:
		return InvalidParams(field+".kind", `must be "text", "file" or "data"`)
	}
	p.Kind, p.File = "", nil
	return nil
}

func (p *ListTasksRequest) validate(v Version) *Error {
	if p.PageSize != nil && *p.PageSize < 0 {
		return InvalidParams("pageSize", "must not be negative")
	}
	if err := validHistory(p.HistoryLength); err != nil {
		return err
	}
	if p.Status != "" {
		s, ok := ParseState(string(p.Status), v)
		if !ok {
			return InvalidParams("status", "is not a task state")
		}
		p.Status = s
	}
	return nil
}
