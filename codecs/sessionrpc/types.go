package sessionrpc

import "encoding/json"

// Version is the protocol version this gateway speaks; status.result lists it.
const Version = "1"

// Client message types.
const (
	TypeStatusGet  = "status.get"
	TypeChatStart  = "chat.start"
	TypeChatAbort  = "chat.abort"
	TypeTaskStatus = "task.status"
)

// Server message types.
const (
	TypeStatusResult     = "status.result"
	TypeChatAccepted     = "chat.accepted"
	TypeChatQueued       = "chat.queued"
	TypeChatStarted      = "chat.started"
	TypeChatEvent        = "chat.event"
	TypeChatDone         = "chat.done"
	TypeChatError        = "chat.error"
	TypeChatAbortResult  = "chat.abort.result"
	TypeTaskStatusResult = "task.status.result"
	TypeError            = "error"
)

// Event types (the "type" member of a chat.event payload).
const (
	EventStatus     = "status"
	EventReasoning  = "reasoning"
	EventToolCall   = "tool-call"
	EventToolOutput = "tool-output"
	EventToolResult = "tool-result"
	EventTextDelta  = "text-delta"
	EventUsage      = "usage"
	EventChecklist  = "checklist"
	EventError      = "error"
)

// Envelope is one message on the wire, either way.
type Envelope struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Frame is one message of a session target's result stream: Type is TypeChatEvent,
// TypeChatDone or TypeChatError, Payload what the client receives as the payload of
// that message (the face adds the request id and, for chat.done and chat.error, the
// task id).
type Frame struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// StartPayload is the payload of chat.start: one task. Unknown members are kept in
// Extra by the decoder and passed to the target as they came.
type StartPayload struct {
	Message   string          `json:"message"`
	History   json.RawMessage `json:"history,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Options   json.RawMessage `json:"options,omitempty"`
}
