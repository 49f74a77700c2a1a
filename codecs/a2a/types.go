package a2a

import "encoding/json"

// TaskState is the state of a task, by its 1.0 name.
type TaskState string

// The task states of 1.0 (a2a.proto TaskState).
const (
	StateUnspecified   TaskState = "TASK_STATE_UNSPECIFIED"
	StateSubmitted     TaskState = "TASK_STATE_SUBMITTED"
	StateWorking       TaskState = "TASK_STATE_WORKING"
	StateCompleted     TaskState = "TASK_STATE_COMPLETED"
	StateFailed        TaskState = "TASK_STATE_FAILED"
	StateCanceled      TaskState = "TASK_STATE_CANCELED"
	StateInputRequired TaskState = "TASK_STATE_INPUT_REQUIRED"
	StateRejected      TaskState = "TASK_STATE_REJECTED"
	StateAuthRequired  TaskState = "TASK_STATE_AUTH_REQUIRED"
)

// Terminal reports whether no further move leaves s: completed, failed, canceled, rejected.
func (s TaskState) Terminal() bool {
	switch s {
	case StateCompleted, StateFailed, StateCanceled, StateRejected:
		return true
	default:
		return false
	}
}

// Role is who sent a message, by its 1.0 name.
type Role string

// The roles of 1.0.
const (
	RoleUser  Role = "ROLE_USER"
	RoleAgent Role = "ROLE_AGENT"
)

// Part is one piece of a message or an artifact: exactly one of Text, Raw, URL and Data
// (1.0), with optional metadata, file name and media type. Kind and File are the 0.3
// spellings (kind "text", "file" or "data"; a file's bytes or uri inside File); the
// decoder folds them into the 1.0 members and the 1.0 encoder never writes them.
type Part struct {
	Text      *string         `json:"text,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Kind      string          `json:"kind,omitempty"`
	File      *FileV03        `json:"file,omitempty"`
}

// FileV03 is the file of a 0.3 file part: its bytes (base64) or its uri.
type FileV03 struct {
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Bytes    string `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
}

// TextPart returns a part holding text.
func TextPart(s string) Part { return Part{Text: &s} }

// DataPart returns a part holding the JSON value v, of media type application/json.
func DataPart(v json.RawMessage) Part { return Part{Data: v, MediaType: "application/json"} }

// Message is one turn of a conversation.
type Message struct {
	MessageID        string          `json:"messageId"`
	ContextID        string          `json:"contextId,omitempty"`
	TaskID           string          `json:"taskId,omitempty"`
	Role             Role            `json:"role"`
	Parts            []Part          `json:"parts"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
	Extensions       []string        `json:"extensions,omitempty"`
	ReferenceTaskIDs []string        `json:"referenceTaskIds,omitempty"`
	Kind             string          `json:"kind,omitempty"` // 0.3: "message"
}

// TaskStatus is a task's state, the message that goes with it, and when it was reached
// (RFC 3339).
type TaskStatus struct {
	State     TaskState `json:"state"`
	Message   *Message  `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID  string          `json:"artifactId"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parts       []Part          `json:"parts"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	Extensions  []string        `json:"extensions,omitempty"`
}

// Task is a unit of work an agent does for a client.
type Task struct {
	ID        string          `json:"id"`
	ContextID string          `json:"contextId"`
	Status    TaskStatus      `json:"status"`
	Artifacts []Artifact      `json:"artifacts,omitempty"`
	History   []Message       `json:"history,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Kind      string          `json:"kind,omitempty"` // 0.3: "task"
}

// TaskStatusUpdateEvent tells a stream's reader that a task's status changed. Final is the
// 0.3 end-of-stream flag; 1.0 ends the stream after a terminal state instead.
type TaskStatusUpdateEvent struct {
	TaskID    string          `json:"taskId"`
	ContextID string          `json:"contextId"`
	Status    TaskStatus      `json:"status"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Kind      string          `json:"kind,omitempty"`  // 0.3: "status-update"
	Final     bool            `json:"final,omitempty"` // 0.3 only
}

// TaskArtifactUpdateEvent carries an artifact, or a chunk of one (Append).
type TaskArtifactUpdateEvent struct {
	TaskID    string          `json:"taskId"`
	ContextID string          `json:"contextId"`
	Artifact  Artifact        `json:"artifact"`
	Append    bool            `json:"append,omitempty"`
	LastChunk bool            `json:"lastChunk,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Kind      string          `json:"kind,omitempty"` // 0.3: "artifact-update"
}

// StreamResponse is one result of a stream: exactly one member set.
type StreamResponse struct {
	Task           *Task                    `json:"task,omitempty"`
	Message        *Message                 `json:"message,omitempty"`
	StatusUpdate   *TaskStatusUpdateEvent   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *TaskArtifactUpdateEvent `json:"artifactUpdate,omitempty"`
}

// SendMessageResponse is the result of SendMessage: a task or a message.
type SendMessageResponse struct {
	Task    *Task    `json:"task,omitempty"`
	Message *Message `json:"message,omitempty"`
}

// ListTasksResponse is the result of ListTasks.
type ListTasksResponse struct {
	Tasks         []Task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int32  `json:"pageSize"`
	TotalSize     int32  `json:"totalSize"`
}
