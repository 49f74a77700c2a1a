package nekte_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func TestAppendEvent(t *testing.T) {
	tests := []struct {
		ev    nekte.Event
		frame string
		final bool
	}{
		{nekte.ProgressEvent{Processed: 50, Total: 500, Message: "Processing batch 1"},
			"event: progress\ndata: {\"processed\":50,\"total\":500,\"message\":\"Processing batch 1\"}\n\n", false},
		{nekte.ProgressEvent{Processed: 0, Total: 0},
			"event: progress\ndata: {\"processed\":0,\"total\":0}\n\n", false},
		{nekte.PartialEvent{Out: json.RawMessage(`{ "preliminary_score" : 0.72 }`), ResolvedLevel: nekte.Compact},
			"event: partial\ndata: {\"out\":{\"preliminary_score\":0.72},\"resolved_level\":\"compact\"}\n\n", false},
		{nekte.CompleteEvent{TaskID: "task-001", Out: nekte.Levels{Minimal: "65% positive", Compact: json.RawMessage("{\n\"p\": 0.65\n}")}, Meta: &nekte.Meta{Ms: 1200}},
			"event: complete\ndata: {\"task_id\":\"task-001\",\"status\":\"completed\",\"out\":{\"minimal\":\"65% positive\",\"compact\":{\"p\":0.65}},\"meta\":{\"ms\":1200}}\n\n", true},
		{nekte.ErrorEvent{TaskID: "t", Code: schemas.CodeTaskFailed, Message: "handler <failed> & stopped\nline 2"},
			"event: error\ndata: {\"task_id\":\"t\",\"code\":-32007,\"message\":\"handler <failed> & stopped\\nline 2\"}\n\n", true},
		{nekte.ErrorEvent{Code: schemas.CodeTaskTimeout, Message: "timeout"},
			"event: error\ndata: {\"code\":-32006,\"message\":\"timeout\"}\n\n", true},
		{nekte.CancelledEvent{TaskID: "task-001", Reason: "User requested", PreviousStatus: nekte.TaskRunning},
			"event: cancelled\ndata: {\"task_id\":\"task-001\",\"reason\":\"User requested\",\"previous_status\":\"running\"}\n\n", true},
		{nekte.SuspendedEvent{TaskID: "task-001", CheckpointAvailable: true},
			"event: suspended\ndata: {\"task_id\":\"task-001\",\"checkpoint_available\":true}\n\n", false},
		{nekte.ResumedEvent{TaskID: "task-001", FromCheckpoint: true},
			"event: resumed\ndata: {\"task_id\":\"task-001\",\"from_checkpoint\":true}\n\n", false},
		{nekte.StatusChangeEvent{TaskID: "t", From: nekte.TaskAccepted, To: nekte.TaskRunning},
			"event: status_change\ndata: {\"task_id\":\"t\",\"from\":\"accepted\",\"to\":\"running\"}\n\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.ev.EventName(), func(t *testing.T) {
			got, err := nekte.AppendEvent([]byte("prefix|"), tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			if want := "prefix|" + tt.frame; string(got) != want {
				t.Errorf("\n got  %q\n want %q", got, want)
			}
			if nekte.Final(tt.ev) != tt.final {
				t.Errorf("Final = %v", !tt.final)
			}
			name, data := parseStrict(t, strings.TrimPrefix(string(got), "prefix|"))
			if name != tt.ev.EventName() || !json.Valid([]byte(data)) {
				t.Errorf("client reads event %q data %q", name, data)
			}
		})
	}
}

// parseStrict reads one frame the way the reference client does: events end at a blank
// line, "event: " and "data: " need their space, and the last data line counts.
func parseStrict(t *testing.T, frame string) (name, data string) {
	t.Helper()
	events := strings.Split(frame, "\n\n")
	if len(events) != 2 || events[1] != "" {
		t.Fatalf("frame %q is not exactly one event", frame)
	}
	for line := range strings.SplitSeq(events[0], "\n") {
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			name = v
		} else if v, ok := strings.CutPrefix(line, "data: "); ok {
			data = v
		} else {
			t.Fatalf("unexpected line %q", line)
		}
	}
	return name, data
}

func TestAppendEventInvalidRaw(t *testing.T) {
	dst := []byte("kept")
	got, err := nekte.AppendEvent(dst, nekte.PartialEvent{Out: json.RawMessage(`{broken`)})
	if err == nil || string(got) != "kept" {
		t.Errorf("AppendEvent = %q, %v", got, err)
	}
}

func TestCompleteEventRoundTrip(t *testing.T) {
	in := nekte.CompleteEvent{TaskID: "t", Out: nekte.Levels{Minimal: "m", Full: json.RawMessage(`[1]`)}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out nekte.CompleteEvent
	if err := json.Unmarshal(b, &out); err != nil || out.TaskID != "t" || out.Out.Minimal != "m" || string(out.Out.Full) != "[1]" {
		t.Errorf("round trip of %s = %+v, %v", b, out, err)
	}
}

func TestSSEHeaders(t *testing.T) {
	want := "Content-Type: text/event-stream|Cache-Control: no-cache|Connection: keep-alive|X-Accel-Buffering: no"
	var got []string
	for _, h := range nekte.SSEHeaders {
		got = append(got, h[0]+": "+h[1])
	}
	if strings.Join(got, "|") != want {
		t.Errorf("got %v", got)
	}
}

func FuzzAppendEvent(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	texts := fuzzseed.Strings(f, 128, fuzzseed.NEKTEResponse)
	for i, raw := range fuzzseed.Members(f, "result", fuzzseed.NEKTEResponse) {
		f.Add(texts[i%len(texts)], texts[(i+1)%len(texts)], string(raw))
	}
	f.Add("task-1", "Processing batch 1", `{"a":1}`)
	f.Add("t\n2", "line\r\nbreak\u2028", "[1,\n2]")
	f.Fuzz(func(t *testing.T, id, text, raw string) {
		events := []nekte.Event{
			nekte.ProgressEvent{Processed: 1, Total: 2, Message: text},
			nekte.CancelledEvent{TaskID: id, Reason: text, PreviousStatus: nekte.TaskRunning},
			nekte.ErrorEvent{TaskID: id, Code: schemas.CodeTaskFailed, Message: text},
			nekte.CompleteEvent{TaskID: id, Out: nekte.Levels{Minimal: text, Full: json.RawMessage(raw)}},
		}
		for _, ev := range events {
			frame, err := nekte.AppendEvent(nil, ev)
			if err != nil {
				if json.Valid([]byte(raw)) {
					t.Fatalf("AppendEvent(%+v): %v", ev, err)
				}
				continue
			}
			name, data := parseStrict(t, string(frame))
			if name != ev.EventName() || !json.Valid([]byte(data)) {
				t.Fatalf("frame %q reads as %q %q", frame, name, data)
			}
		}
	})
}

func BenchmarkAppendEvent(b *testing.B) {
	ev := nekte.CompleteEvent{TaskID: "task-001", Out: nekte.Levels{Minimal: "65% positive", Compact: json.RawMessage(`{"positive":0.65,"negative":0.2,"neutral":0.15}`)}}
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		var err error
		if buf, err = nekte.AppendEvent(buf[:0], ev); err != nil {
			b.Fatal(err)
		}
	}
}
