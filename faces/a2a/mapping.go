package a2aface

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// What a NEKTE task is in A2A terms.
//
//	NEKTE                   A2A
//	pending, accepted       TASK_STATE_SUBMITTED
//	running, suspended      TASK_STATE_WORKING (a suspended task resumes)
//	completed               TASK_STATE_COMPLETED, its result the artifact "result"
//	failed                  TASK_STATE_FAILED; TASK_STATE_REJECTED when refused by policy (4xxx)
//	cancelled               TASK_STATE_CANCELED
//
// Progress becomes a status update (working, with the progress as the agent's message),
// a partial result an appended chunk of the artifact "partial".

// stateOf maps a NEKTE status (and, for a failed task, its error code) to an A2A state.
func stateOf(s nk.TaskStatus, code schemas.Code) a2a.TaskState {
	switch s {
	case nk.TaskPending, nk.TaskAccepted:
		return a2a.StateSubmitted
	case nk.TaskRunning, nk.TaskSuspended:
		return a2a.StateWorking
	case nk.TaskCompleted:
		return a2a.StateCompleted
	case nk.TaskCancelled:
		return a2a.StateCanceled
	case nk.TaskFailed:
		if code >= schemas.CodeAuthorization && code < schemas.CodeQuota {
			return a2a.StateRejected
		}
		return a2a.StateFailed
	}
	return a2a.StateUnspecified
}

// Artifact ids of the face.
const (
	artifactResult  = "result"
	artifactPartial = "partial"
)

// tracker follows a NEKTE task's events and says what they are in A2A: it holds the
// task as the events have built it so far.
type tracker struct {
	task     a2a.Task
	now      func() time.Time
	partials int
}

func newTracker(r *record, now func() time.Time) *tracker {
	return &tracker{now: now, task: a2a.Task{ID: r.ID, ContextID: r.ContextID,
		Status: a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: stamp(now())}, History: r.History}}
}

// stamp writes t as RFC 3339 with milliseconds, in UTC.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// event is a message of a NEKTE task stream.
type event struct {
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// apply reads one message of the NEKTE stream and returns the A2A events it makes; final
// says the task reached a terminal state.
func (t *tracker) apply(msg []byte) (evs []a2a.Event, final bool) {
	var ev event
	if json.Unmarshal(msg, &ev) != nil {
		return nil, false
	}
	switch ev.Event {
	case nk.EventStatusChange:
		var d nk.StatusChangeEvent
		if json.Unmarshal(ev.Data, &d) == nil && !d.To.Terminal() {
			return t.status(stateOf(d.To, 0), ""), false
		}
	case nk.EventProgress:
		var d nk.ProgressEvent
		if json.Unmarshal(ev.Data, &d) == nil {
			return t.status(a2a.StateWorking, progressText(d)), false
		}
	case nk.EventPartial:
		var d nk.PartialEvent
		if json.Unmarshal(ev.Data, &d) == nil {
			return []a2a.Event{t.partial(d.Out)}, false
		}
	case nk.EventComplete:
		var d nk.CompleteEvent
		if json.Unmarshal(ev.Data, &d) == nil {
			art := t.result(d.Out)
			return append([]a2a.Event{art}, t.status(a2a.StateCompleted, "")...), true
		}
	case nk.EventError:
		var d nk.ErrorEvent
		_ = json.Unmarshal(ev.Data, &d)
		return t.status(stateOf(nk.TaskFailed, d.Code), d.Message), true
	case nk.EventCancelled:
		var d nk.CancelledEvent
		_ = json.Unmarshal(ev.Data, &d)
		return t.status(a2a.StateCanceled, d.Reason), true
	case nk.EventSuspended:
		return t.status(a2a.StateWorking, "suspended: the task resumes from its checkpoint"), false
	case nk.EventResumed:
		return t.status(a2a.StateWorking, "resumed"), false
	}
	return nil, false
}

// rank orders the states a task moves through: submitted, working, then the end.
func rank(s a2a.TaskState) int {
	switch {
	case s == a2a.StateSubmitted:
		return 1
	case s == a2a.StateWorking:
		return 2
	case s.Terminal():
		return 3
	}
	return 0
}

func progressText(d nk.ProgressEvent) string {
	s := fmt.Sprintf("%d/%d", d.Processed, d.Total)
	if d.Message != "" {
		s += ": " + d.Message
	}
	return s
}

// status moves the task to state, with text as the agent's status message, and returns
// the status update; nothing when neither changed, or when state lies behind the task's
// (a re-attached stream replays the task's events from its start).
func (t *tracker) status(state a2a.TaskState, text string) []a2a.Event {
	st := &t.task.Status
	if rank(state) < rank(st.State) || (st.State == state && text == "" && st.Message == nil) {
		return nil
	}
	*st = a2a.TaskStatus{State: state, Timestamp: stamp(t.now())}
	if text != "" {
		st.Message = &a2a.Message{MessageID: newID("msg-"), TaskID: t.task.ID, ContextID: t.task.ContextID,
			Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}}
	}
	return []a2a.Event{{Status: &a2a.TaskStatusUpdateEvent{TaskID: t.task.ID, ContextID: t.task.ContextID,
		Status: *st}, Final: state.Terminal()}}
}

// partial returns the update of one more chunk of the artifact "partial".
func (t *tracker) partial(out json.RawMessage) a2a.Event {
	art := a2a.Artifact{ArtifactID: artifactPartial, Name: "partial results", Parts: []a2a.Part{valuePart(out)}}
	ev := a2a.Event{Artifact: &a2a.TaskArtifactUpdateEvent{TaskID: t.task.ID, ContextID: t.task.ContextID,
		Artifact: art, Append: t.partials > 0}}
	t.partials++
	return ev
}

// result records the task's result as the artifact "result" and returns its update.
func (t *tracker) result(out nk.Levels) a2a.Event {
	art := resultArtifact(out)
	t.task.Artifacts = append(t.task.Artifacts, art)
	return a2a.Event{Artifact: &a2a.TaskArtifactUpdateEvent{TaskID: t.task.ID, ContextID: t.task.ContextID,
		Artifact: art, LastChunk: true}}
}

// resultArtifact is a result's artifact: the full value as a data part (a text part when
// it is a string), and the minimal summary as a text part when there is one.
func resultArtifact(out nk.Levels) a2a.Artifact {
	art := a2a.Artifact{ArtifactID: artifactResult, Name: "result"}
	full := out.Full
	if len(full) == 0 {
		full = out.Compact
	}
	if len(full) > 0 {
		art.Parts = append(art.Parts, valuePart(full))
	}
	if out.Minimal != "" && (len(art.Parts) == 0 || art.Parts[0].Text == nil) {
		art.Parts = append(art.Parts, a2a.TextPart(out.Minimal))
	}
	if len(art.Parts) == 0 {
		art.Parts = []a2a.Part{a2a.DataPart(json.RawMessage("null"))}
	}
	return art
}

// valuePart is a JSON value as a part: text for a string, data for anything else.
func valuePart(v json.RawMessage) a2a.Part {
	var s string
	if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
		return a2a.TextPart(s)
	}
	return a2a.DataPart(v)
}
