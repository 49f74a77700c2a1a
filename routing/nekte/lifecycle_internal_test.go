package nekte

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

var allStatuses = []nk.TaskStatus{
	nk.TaskPending, nk.TaskAccepted, nk.TaskRunning, nk.TaskSuspended,
	nk.TaskCompleted, nk.TaskFailed, nk.TaskCancelled,
}

// TestMoveEveryPair checks move against the state machine of the NEKTE primitives for
// every (from, to) pair, written out here rather than derived from codecs/nekte.
func TestMoveEveryPair(t *testing.T) {
	allowed := map[[2]nk.TaskStatus]bool{
		{nk.TaskPending, nk.TaskAccepted}:    true,
		{nk.TaskPending, nk.TaskCancelled}:   true,
		{nk.TaskPending, nk.TaskFailed}:      true,
		{nk.TaskAccepted, nk.TaskRunning}:    true,
		{nk.TaskAccepted, nk.TaskCancelled}:  true,
		{nk.TaskAccepted, nk.TaskFailed}:     true,
		{nk.TaskRunning, nk.TaskCompleted}:   true,
		{nk.TaskRunning, nk.TaskSuspended}:   true,
		{nk.TaskRunning, nk.TaskCancelled}:   true,
		{nk.TaskRunning, nk.TaskFailed}:      true,
		{nk.TaskSuspended, nk.TaskRunning}:   true,
		{nk.TaskSuspended, nk.TaskCancelled}: true,
		{nk.TaskSuspended, nk.TaskFailed}:    true,
	}
	for _, from := range allStatuses {
		for _, to := range allStatuses {
			t.Run(string(from)+"→"+string(to), func(t *testing.T) {
				r := &record{ID: "t-1", Status: from, StartedAt: 1000, ElapsedMs: 5, lim: logLimits{maxEvents: 8, maxBytes: 1 << 10}}
				err := move(r, to, "why", 1500)
				if allowed[[2]nk.TaskStatus{from, to}] {
					checkAllowed(t, r, err, from, to)
					return
				}
				checkRefused(t, r, err, from, to)
			})
		}
	}
}

func checkAllowed(t *testing.T, r *record, err error, from, to nk.TaskStatus) {
	t.Helper()
	if err != nil {
		t.Fatalf("move: %v, want it allowed", err)
	}
	if r.Status != to || r.UpdatedAt != 1500 {
		t.Fatalf("record %s updated %d, want %s at 1500", r.Status, r.UpdatedAt, to)
	}
	if len(r.fresh) != 1 || len(r.Log.Events) != 1 || r.Log.Events[0].Name != nk.EventStatusChange {
		t.Fatalf("events %+v, want one status_change", r.Log.Events)
	}
	want := `{"task_id":"t-1","from":"` + string(from) + `","to":"` + string(to) + `","reason":"why"}`
	if got := string(r.Log.Events[0].Data); got != want {
		t.Fatalf("status_change %s, want %s", got, want)
	}
	switch {
	case from == nk.TaskRunning && r.ElapsedMs != 505:
		t.Fatalf("elapsed %d ms after leaving running, want 505", r.ElapsedMs)
	case to == nk.TaskRunning && r.StartedAt != 1500:
		t.Fatalf("started_at %d, want 1500", r.StartedAt)
	case to.Terminal() && r.CompletedAt != 1500:
		t.Fatalf("completed_at %d, want 1500", r.CompletedAt)
	}
}

func checkRefused(t *testing.T, r *record, err error, from, to nk.TaskStatus) {
	t.Helper()
	if err == nil {
		t.Fatal("move allowed, want it refused")
	}
	if r.Status != from || len(r.Log.Events) != 0 || len(r.fresh) != 0 {
		t.Fatalf("a refused move changed the record: %s, %d events", r.Status, len(r.Log.Events))
	}
	var ge *gateway.Error
	isGE := errors.As(err, &ge)
	switch to {
	case nk.TaskCancelled:
		if !isGE || ge.Code() != schemas.CodeTaskNotCancellable || ge.Message() != "Task not cancellable: t-1 (status "+string(from)+")" {
			t.Fatalf("error %v, want TASK_NOT_CANCELLABLE", err)
		}
	case nk.TaskRunning, nk.TaskSuspended:
		if !isGE || ge.Code() != schemas.CodeTaskNotResumable {
			t.Fatalf("error %v, want TASK_NOT_RESUMABLE", err)
		}
	default:
		if !errors.Is(err, errStale) {
			t.Fatalf("error %v, want errStale", err)
		}
	}
}

// TestApplyOneWinner moves one task from two goroutines over one store at once: exactly
// one compare-and-swap wins, the other sees the new status and is refused.
func TestApplyOneWinner(t *testing.T) {
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	defer kv.Close()
	cfg := Config{}.WithDefaults()
	for round := range 50 {
		id := "t-" + string(rune('a'+round%26)) + string(rune('a'+round/26))
		stores := []*taskStore{newTaskStore(kv, cfg.Tasks), newTaskStore(kv, cfg.Tasks)}
		ctx := context.Background()
		if err := stores[0].create(ctx, &record{ID: id, Owner: "o", Status: nk.TaskRunning, Input: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		targets := []nk.TaskStatus{nk.TaskCancelled, nk.TaskCompleted}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() {
				_, errs[i] = stores[i].apply(ctx, "o", id, func(r *record) error { return move(r, targets[i], "", 1) })
			})
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: errors %v and %v, want exactly one move to win", round, errs[0], errs[1])
		}
		r, err := stores[0].get(ctx, "o", id)
		if err != nil {
			t.Fatal(err)
		}
		winner := 0
		if errs[0] != nil {
			winner = 1
		}
		if r.Status != targets[winner] || len(r.Log.Events) != 1 {
			t.Fatalf("round %d: stored %s with %d events, want %s with 1", round, r.Status, len(r.Log.Events), targets[winner])
		}
	}
}

// TestEventLogBounds keeps the newest events within max_events and max_event_bytes, the
// final one always, and reduces an event too large for the log.
func TestEventLogBounds(t *testing.T) {
	tests := []struct {
		name              string
		lim               logLimits
		events            int
		wantKept          int
		wantFirst         int64
		bigComplete       bool
		wantCompleteStore string
	}{
		{"under the limits", logLimits{maxEvents: 8, maxBytes: 1 << 20}, 5, 6, 1, false, ""},
		{"at max_events", logLimits{maxEvents: 6, maxBytes: 1 << 20}, 5, 6, 1, false, ""},
		{"past max_events", logLimits{maxEvents: 4, maxBytes: 1 << 20}, 9, 4, 7, false, ""},
		{"past max_event_bytes", logLimits{maxEvents: 100, maxBytes: 130}, 9, 3, 8, false, ""},
		{"complete too large", logLimits{maxEvents: 100, maxBytes: 80}, 0, 1, 1, true,
			`{"task_id":"t","status":"completed","out":{"minimal":"short"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &record{ID: "t", lim: tt.lim}
			for i := range tt.events {
				r.emit(nk.ProgressEvent{Processed: i, Total: 100})
			}
			full := nk.Levels{Minimal: "short"}
			if tt.bigComplete {
				full.Compact = json.RawMessage(`{"text":"` + longText(200) + `"}`)
			} else {
				full.Compact = json.RawMessage(`{}`)
			}
			r.emit(nk.CompleteEvent{TaskID: "t", Out: full})
			if len(r.Log.Events) != tt.wantKept || r.Log.Events[0].Seq != tt.wantFirst {
				t.Fatalf("kept %d from seq %d, want %d from %d", len(r.Log.Events), r.Log.Events[0].Seq, tt.wantKept, tt.wantFirst)
			}
			last := r.Log.Events[len(r.Log.Events)-1]
			if last.Name != nk.EventComplete || last.Seq != int64(tt.events+1) {
				t.Fatalf("last event %s #%d, want complete #%d", last.Name, last.Seq, tt.events+1)
			}
			if tt.wantCompleteStore != "" && (string(last.Data) != tt.wantCompleteStore || last.Reduced != reducedTooLarge) {
				t.Fatalf("stored complete %s (%s), want %s", last.Data, last.Reduced, tt.wantCompleteStore)
			}
			if live := r.fresh[len(r.fresh)-1]; !live.final || !json.Valid(live.msg) || len(live.msg) < 200 && tt.bigComplete {
				t.Fatalf("live complete %s, want the full event", live.msg)
			}
			size := 0
			for _, e := range r.Log.Events {
				size += len(e.Data)
			}
			if size != r.Log.Bytes || (len(r.Log.Events) > 1 && size > tt.lim.maxBytes) {
				t.Fatalf("log bytes %d (counted %d), limit %d", size, r.Log.Bytes, tt.lim.maxBytes)
			}
		})
	}
}

func longText(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}
