package a2a

import (
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
)

// Results are written as version v writes them: 1.0 wraps a task in SendMessageResponse and
// a stream result in the member of its kind; 0.3 writes the object itself with its kind.

// Event is one result of a stream, before it is spelled for a version: exactly one member
// set. Final marks the last event of the stream (0.3 writes it in a status update).
type Event struct {
	Task     *Task
	Status   *TaskStatusUpdateEvent
	Artifact *TaskArtifactUpdateEvent
	Final    bool
}

// MarshalEvent returns the stream result of ev in version v.
func MarshalEvent(ev Event, v Version) ([]byte, error) {
	switch {
	case ev.Task != nil:
		t := ev.Task.In(v)
		if v == V03 {
			return json.Marshal(t)
		}
		return json.Marshal(StreamResponse{Task: &t})
	case ev.Status != nil:
		s := ev.Status.In(v, ev.Final)
		if v == V03 {
			return json.Marshal(s)
		}
		return json.Marshal(StreamResponse{StatusUpdate: &s})
	default:
		a := ev.Artifact.In(v)
		if v == V03 {
			return json.Marshal(a)
		}
		return json.Marshal(StreamResponse{ArtifactUpdate: &a})
	}
}

// MarshalSendResult returns the result of SendMessage for t in version v.
func MarshalSendResult(t Task, v Version) ([]byte, error) {
	t = t.In(v)
	if v == V03 {
		return json.Marshal(t)
	}
	return json.Marshal(SendMessageResponse{Task: &t})
}

// MarshalTask returns t as the result of GetTask or CancelTask in version v.
func MarshalTask(t Task, v Version) ([]byte, error) {
	return json.Marshal(t.In(v))
}

// MarshalList returns the result of ListTasks in version v.
func MarshalList(r ListTasksResponse, v Version) ([]byte, error) {
	if r.Tasks == nil {
		r.Tasks = []Task{}
	}
	r.Tasks = mapSlice(r.Tasks, func(t Task) Task { return t.In(v) })
	return json.Marshal(r)
}

// AppendResult appends the JSON-RPC response carrying result to dst.
func AppendResult(dst []byte, id jsonrpc.ID, result []byte) []byte {
	return jsonrpc.AppendResult(dst, id, result)
}
