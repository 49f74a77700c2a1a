package sessionrpc

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// AppendEnvelope appends the envelope {"id":id,"type":typ,"payload":payload} to dst;
// payload is raw JSON (an object), omitted when empty. It writes no reflection: the
// face's hot path (one envelope per event) costs a copy of the payload.
func AppendEnvelope(dst []byte, id, typ string, payload []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = AppendString(dst, id)
	dst = append(dst, `,"type":`...)
	dst = AppendString(dst, typ)
	if len(payload) > 0 {
		dst = append(dst, `,"payload":`...)
		dst = append(dst, payload...)
	}
	return append(dst, '}')
}

// AppendWithMember appends payload, a JSON object, to dst with the string member
// name:value first; a member of that name payload already has is dropped, so that the
// object names it once. A payload that is not an object is wrapped as {name:value}.
func AppendWithMember(dst []byte, payload []byte, name, value string) []byte {
	payload = bytes.TrimSpace(payload)
	dst = append(dst, '{')
	dst = AppendString(dst, name)
	dst = append(dst, ':')
	dst = AppendString(dst, value)
	if len(payload) < 2 || payload[0] != '{' {
		return append(dst, '}')
	}
	if bytes.Contains(payload, []byte(strconv.Quote(name))) {
		payload = withoutMember(payload, name)
	}
	inner := bytes.TrimSpace(payload[1 : len(payload)-1])
	if len(inner) > 0 {
		dst = append(dst, ',')
		dst = append(dst, inner...)
	}
	return append(dst, '}')
}

// withoutMember returns payload without its top-level member name (the rare path: a
// target's payload that names the member the face sets).
func withoutMember(payload []byte, name string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(payload, &m) != nil {
		return payload
	}
	if _, ok := m[name]; !ok {
		return payload
	}
	delete(m, name)
	out, err := json.Marshal(m)
	if err != nil {
		return payload
	}
	return out
}

// AppendString appends s as a JSON string, escaped as encoding/json escapes it.
func AppendString(dst []byte, s string) []byte {
	return append(AppendEscaped(append(dst, '"'), s), '"')
}

const hex = "0123456789abcdef"

// AppendQueued appends the payload of chat.queued: {"taskId":…,"position":n}.
func AppendQueued(dst []byte, taskID string, position int) []byte {
	dst = append(dst, `{"taskId":`...)
	dst = AppendString(dst, taskID)
	dst = append(dst, `,"position":`...)
	dst = strconv.AppendInt(dst, int64(position), 10)
	return append(dst, '}')
}

// AppendTask appends the payload {"taskId":…} of chat.accepted and chat.started.
func AppendTask(dst []byte, taskID string) []byte {
	dst = append(dst, `{"taskId":`...)
	dst = AppendString(dst, taskID)
	return append(dst, '}')
}

// ErrorPayload is the payload of chat.error and of error: a stable errorId, a message, the
// gateway error code, and structured detail.
type ErrorPayload struct {
	TaskID  string         `json:"taskId,omitempty"`
	ErrorID string         `json:"errorId"`
	Message string         `json:"message"`
	Code    int            `json:"code"`
	Detail  map[string]any `json:"detail,omitempty"`
}

// AbortResult is the payload of chat.abort.result.
type AbortResult struct {
	RequestID string `json:"requestId"`
	Aborted   bool   `json:"aborted"`
	State     string `json:"state"`
}

// TaskStatus is the payload of task.status.result.
type TaskStatus struct {
	TaskID    string `json:"taskId"`
	RequestID string `json:"requestId"`
	State     string `json:"state"`
	Position  int    `json:"position,omitempty"`
}

// StatusResult is the payload of status.result: the handshake.
type StatusResult struct {
	Versions []string       `json:"versions"`
	Version  string         `json:"version"`
	Features []string       `json:"features"`
	Routes   []string       `json:"routes,omitempty"`
	Limits   map[string]any `json:"limits,omitempty"`
}

// Task states (task.status.result, chat.abort.result).
const (
	StateQueued  = "queued"
	StateRunning = "running"
	StateDone    = "done"
	StateError   = "error"
	StateAborted = "aborted"
	StateUnknown = "unknown"
)

// Stable errorIds the gateway itself uses.
const (
	ErrorAborted         = "aborted"
	ErrorInvariantBroken = "invariant_broken"
	ErrorQueueFull       = "queue_full"
	ErrorUnknownTask     = "unknown_task"
	ErrorUnknownRoute    = "unknown_route"
	ErrorDuplicateID     = "duplicate_id"
	ErrorInvalidPayload  = "invalid_payload"
	ErrorSlowConsumer    = "slow_consumer"
	ErrorCredential      = "credential_ended" //nolint:gosec // an errorId, not a credential
	ErrorShuttingDown    = "shutting_down"
)
