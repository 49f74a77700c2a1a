package nekte

import (
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/codecs/sse"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// The event names of a nekte.delegate stream.
const (
	EventProgress     = "progress"
	EventPartial      = "partial"
	EventComplete     = "complete"
	EventError        = "error"
	EventCancelled    = "cancelled"
	EventSuspended    = "suspended"
	EventResumed      = "resumed"
	EventStatusChange = "status_change"
)

// SSEHeaders are the response headers of a nekte.delegate stream, in the order the
// reference sends them.
var SSEHeaders = [][2]string{
	{"Content-Type", sse.ContentType},
	{"Cache-Control", "no-cache"},
	{"Connection", "keep-alive"},
	{"X-Accel-Buffering", "no"},
}

// Event is the payload of one event of a nekte.delegate stream; EventName is the name it
// travels under.
type Event interface {
	EventName() string
}

// Final reports whether ev ends the stream: after complete, error or cancelled the server
// must close the response, or the reference client waits for its own timeout.
func Final(ev Event) bool {
	switch ev.EventName() {
	case EventComplete, EventError, EventCancelled:
		return true
	default:
		return false
	}
}

// AppendEvent appends ev as one server-sent event, exactly
// "event: <name>\ndata: <one-line JSON>\n\n", the frame the reference client parses. The
// JSON is written without HTML escaping and without any line break. It fails only when a
// raw JSON field of ev holds invalid JSON; dst is then returned unchanged.
func AppendEvent(dst []byte, ev Event) ([]byte, error) {
	data, err := marshal(ev)
	if err != nil {
		return dst, err
	}
	return sse.AppendEvent(dst, ev.EventName(), data), nil
}

// ProgressEvent reports how far a task has come.
type ProgressEvent struct {
	Processed int    `json:"processed"`
	Total     int    `json:"total"`
	Message   string `json:"message,omitempty"`
}

// PartialEvent carries a preliminary result.
type PartialEvent struct {
	Out           json.RawMessage `json:"out"`
	ResolvedLevel DetailLevel     `json:"resolved_level,omitempty"`
}

// CompleteEvent carries the final result in its levels; it is written with
// "status": "completed".
type CompleteEvent struct {
	TaskID string
	Out    Levels
	Meta   *Meta
}

// completeWire is the wire shape of CompleteEvent.
type completeWire struct {
	TaskID string     `json:"task_id"`
	Status TaskStatus `json:"status"`
	Out    Levels     `json:"out"`
	Meta   *Meta      `json:"meta,omitempty"`
}

// MarshalJSON writes the event with its constant status.
func (e CompleteEvent) MarshalJSON() ([]byte, error) {
	return marshal(completeWire{TaskID: e.TaskID, Status: TaskCompleted, Out: e.Out, Meta: e.Meta})
}

// UnmarshalJSON reads the event, ignoring its status.
func (e *CompleteEvent) UnmarshalJSON(b []byte) error {
	var w completeWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = CompleteEvent{TaskID: w.TaskID, Out: w.Out, Meta: w.Meta}
	return nil
}

// ErrorEvent reports that a task failed. Message is human text.
type ErrorEvent struct {
	TaskID  string       `json:"task_id,omitempty"`
	Code    schemas.Code `json:"code"`
	Message string       `json:"message"`
}

// CancelledEvent reports that a task was cancelled, and from which state.
type CancelledEvent struct {
	TaskID         string     `json:"task_id"`
	Reason         string     `json:"reason,omitempty"`
	PreviousStatus TaskStatus `json:"previous_status"`
}

// SuspendedEvent reports that a task was suspended.
type SuspendedEvent struct {
	TaskID              string `json:"task_id"`
	CheckpointAvailable bool   `json:"checkpoint_available"`
}

// ResumedEvent reports that a task was resumed.
type ResumedEvent struct {
	TaskID         string `json:"task_id"`
	FromCheckpoint bool   `json:"from_checkpoint"`
}

// StatusChangeEvent reports a move of the task state machine.
type StatusChangeEvent struct {
	TaskID string     `json:"task_id"`
	From   TaskStatus `json:"from"`
	To     TaskStatus `json:"to"`
	Reason string     `json:"reason,omitempty"`
}

// EventName returns "progress".
func (ProgressEvent) EventName() string { return EventProgress }

// EventName returns "partial".
func (PartialEvent) EventName() string { return EventPartial }

// EventName returns "complete".
func (CompleteEvent) EventName() string { return EventComplete }

// EventName returns "error".
func (ErrorEvent) EventName() string { return EventError }

// EventName returns "cancelled".
func (CancelledEvent) EventName() string { return EventCancelled }

// EventName returns "suspended".
func (SuspendedEvent) EventName() string { return EventSuspended }

// EventName returns "resumed".
func (ResumedEvent) EventName() string { return EventResumed }

// EventName returns "status_change".
func (StatusChangeEvent) EventName() string { return EventStatusChange }

var (
	_ Event = ProgressEvent{}
	_ Event = PartialEvent{}
	_ Event = CompleteEvent{}
	_ Event = ErrorEvent{}
	_ Event = CancelledEvent{}
	_ Event = SuspendedEvent{}
	_ Event = ResumedEvent{}
	_ Event = StatusChangeEvent{}
)
