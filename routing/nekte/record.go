package nekte

import (
	"bytes"
	"encoding/json"
	"time"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

// record is a task as the state store keeps it: one JSON value per task, changed only by
// taskStore.apply (a compare-and-swap), which is what makes a move of the state machine
// atomic across replicas.
type record struct {
	ID     string          `json:"id"`
	Owner  string          `json:"owner"`
	Cap    string          `json:"cap"`
	Hash   string          `json:"h"`
	Desc   string          `json:"desc,omitempty"`
	Input  json.RawMessage `json:"input"`
	Budget nk.Budget       `json:"budget"`
	Status nk.TaskStatus   `json:"status"`
	// Attempt counts runs: 1 for the first, one more per resume. A runner writes only
	// while the record's attempt is its own.
	Attempt    int              `json:"attempt"`
	Progress   Progress         `json:"progress"`
	Checkpoint *savedCheckpoint `json:"checkpoint,omitempty"`
	// Epoch milliseconds.
	CreatedAt   int64 `json:"created_at"`
	UpdatedAt   int64 `json:"updated_at"`
	CompletedAt int64 `json:"completed_at,omitempty"`
	// StartedAt is when the current running period began (0 when not running); ElapsedMs
	// is the running time of the periods before it. TimeoutMs bounds their sum.
	StartedAt int64 `json:"started_at,omitempty"`
	// LeaseUntil is, while running, until when the runner vouches it is alive (lease.go).
	LeaseUntil int64 `json:"lease_until,omitempty"`
	ElapsedMs  int64 `json:"elapsed_ms"`
	TimeoutMs  int64 `json:"timeout_ms"`
	// NoDerive is set when the task derives from a derive: false context: its results are
	// withheld from the log and verify's sample check is refused.
	NoDerive bool         `json:"no_derive,omitempty"`
	Context  *taskContext `json:"context,omitempty"`
	Error    *taskError   `json:"error,omitempty"`
	// Receipt is the JWS of a completed task.
	Receipt string   `json:"receipt,omitempty"`
	Log     eventLog `json:"log"`

	lim   logLimits   // set by the store on decode
	fresh []liveEvent // events emitted by the change being applied, with full payloads
}

// taskContext is the context envelope a task carries: a reference to a shared envelope
// (Ref), or an inline one, kept here when it may persist (Inline) or else in the process's
// local store (Local).
type taskContext struct {
	ID     string          `json:"id,omitempty"`
	Ref    bool            `json:"ref,omitempty"`
	Local  bool            `json:"local,omitempty"`
	Inline *storedEnvelope `json:"inline,omitempty"`
}

// taskError is why a task failed.
type taskError struct {
	Code    int32  `json:"code"`
	Message string `json:"message"`
}

// Progress is how far a task has come.
type Progress struct {
	Processed int    `json:"processed"`
	Total     int    `json:"total"`
	Message   string `json:"message,omitempty"`
}

// Checkpoint is what a suspended task resumes from: its input, its last progress, and the
// partial results it had sent (each the out of a partial event), oldest first.
type Checkpoint struct {
	Input    json.RawMessage   `json:"input"`
	Progress Progress          `json:"progress"`
	Partials []json.RawMessage `json:"partials,omitempty"`
}

// savedCheckpoint is a checkpoint as the record keeps it: the input is the record's own.
type savedCheckpoint struct {
	Progress Progress          `json:"progress"`
	Partials []json.RawMessage `json:"partials,omitempty"`
}

// checkpoint returns the task's checkpoint, or nil when it has none.
func (r *record) checkpoint() *Checkpoint {
	if r.Checkpoint == nil {
		return nil
	}
	return &Checkpoint{Input: r.Input, Progress: r.Checkpoint.Progress, Partials: r.Checkpoint.Partials}
}

// eventLog is the bounded log of a task's events, for callers that re-attach. Seq numbers
// count from 1; Last is the seq of the newest event (0 before any).
type eventLog struct {
	Last    int64    `json:"last"`
	Bytes   int      `json:"bytes"`
	Dropped int64    `json:"dropped,omitempty"`
	Events  []logged `json:"events"`
}

// logged is one event as the log keeps it. Reduced says why Data is not the event as sent
// live: "withheld" (a result derived from a derive: false context) or "too_large" (above
// tasks.max_event_bytes).
type logged struct {
	Seq     int64           `json:"seq"`
	Name    string          `json:"event"`
	Data    json.RawMessage `json:"data"`
	Reduced string          `json:"reduced,omitempty"`
}

// liveEvent is an event as streams deliver it: seq and the stream message
// {"event": name, "data": payload}.
type liveEvent struct {
	seq   int64
	final bool
	msg   []byte
}

// logLimits bound a record's event log.
type logLimits struct {
	maxEvents, maxBytes, maxPartials int
}

// Why an event in the log differs from the one sent live.
const (
	reducedWithheld = "withheld"
	reducedTooLarge = "too_large"
)

// maxMessageLen bounds a progress message kept in the log, in bytes.
const maxMessageLen = 512

// emit appends ev to the log (reduced when it must be) and to the events the change
// publishes live.
func (r *record) emit(ev nk.Event) {
	full, err := marshal(ev)
	if err != nil {
		return // the payload types marshal whatever they hold; raw fields are checked JSON
	}
	stored, reduced := full, ""
	if r.NoDerive {
		if w, ok := withheld(ev); ok {
			stored, reduced = w, reducedWithheld
		}
	}
	if len(stored) > r.lim.maxBytes {
		stored, reduced = shrunk(ev, r.NoDerive), reducedTooLarge
	}
	seq := r.Log.Last + 1
	r.Log.Last = seq
	r.Log.Events = append(r.Log.Events, logged{Seq: seq, Name: ev.EventName(), Data: stored, Reduced: reduced})
	r.Log.Bytes += len(stored)
	r.Log.trim(r.lim)
	r.fresh = append(r.fresh, liveEvent{seq: seq, final: nk.Final(ev), msg: message(ev.EventName(), full)})
}

// trim drops the oldest events until the log is within its limits; the newest event
// (which may be the final one) always stays.
func (l *eventLog) trim(lim logLimits) {
	n := 0
	for len(l.Events)-n > 1 && (len(l.Events)-n > lim.maxEvents || l.Bytes > lim.maxBytes) {
		l.Bytes -= len(l.Events[n].Data)
		n++
	}
	if n > 0 {
		l.Events = append(l.Events[:0:0], l.Events[n:]...)
		l.Dropped += int64(n)
	}
}

// since returns the logged events with seq ≥ from as stream events.
func (l *eventLog) since(from int64) []liveEvent {
	var out []liveEvent
	for _, e := range l.Events {
		if e.Seq >= from {
			out = append(out, liveEvent{seq: e.Seq, final: isFinal(e.Name), msg: message(e.Name, e.Data)})
		}
	}
	return out
}

// partials returns the outs of the last n partial events kept in full.
func (l *eventLog) partials(n int) []json.RawMessage {
	var out []json.RawMessage
	for _, e := range l.Events {
		if e.Name != nk.EventPartial || e.Reduced != "" {
			continue
		}
		var p nk.PartialEvent
		if json.Unmarshal(e.Data, &p) == nil {
			out = append(out, p.Out)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

func isFinal(name string) bool {
	return name == nk.EventComplete || name == nk.EventError || name == nk.EventCancelled
}

// withheld returns the form of a result-bearing event kept for a derive: false task.
func withheld(ev nk.Event) ([]byte, bool) {
	switch e := ev.(type) {
	case nk.PartialEvent:
		return mustMarshal(nk.PartialEvent{Out: json.RawMessage(jsonNull)}), true
	case nk.CompleteEvent:
		return mustMarshal(nk.CompleteEvent{TaskID: e.TaskID, Meta: e.Meta}), true
	default:
		return nil, false
	}
}

// shrunk returns the form of an event too large for the log: a complete event keeps its
// minimal level, a partial event loses its out, a progress event its message.
func shrunk(ev nk.Event, noDerive bool) []byte {
	switch e := ev.(type) {
	case nk.PartialEvent:
		return mustMarshal(nk.PartialEvent{Out: json.RawMessage(jsonNull)})
	case nk.CompleteEvent:
		out := nk.Levels{Minimal: e.Out.Minimal}
		if noDerive {
			out = nk.Levels{}
		}
		return mustMarshal(nk.CompleteEvent{TaskID: e.TaskID, Out: out, Meta: e.Meta})
	case nk.ProgressEvent:
		e.Message = ""
		return mustMarshal(e)
	case nk.ErrorEvent:
		e.Message = truncate(e.Message, maxMessageLen)
		return mustMarshal(e)
	default:
		return mustMarshal(ev)
	}
}

// message writes the stream message {"event": name, "data": data}.
func message(name string, data []byte) []byte {
	b := make([]byte, 0, len(name)+len(data)+20)
	b = append(b, `{"event":"`...)
	b = append(b, name...)
	b = append(b, `","data":`...)
	b = append(b, data...)
	return append(b, '}')
}

// ttl returns how long the store keeps the record after this write.
func (r *record) ttl(c TasksConfig) time.Duration {
	if r.Status.Terminal() {
		return c.RecordTTL
	}
	return c.ActiveTTL
}

// runningMs returns the task's running time at now (epoch ms).
func (r *record) runningMs(now int64) int64 {
	if r.StartedAt == 0 {
		return r.ElapsedMs
	}
	return r.ElapsedMs + max(0, now-r.StartedAt)
}

// checkpointAvailable reports whether the task holds a checkpoint to resume from.
func (r *record) checkpointAvailable() bool { return r.Checkpoint != nil }

// compactJSON returns v without insignificant white space (v must be valid JSON).
func compactJSON(v []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}
