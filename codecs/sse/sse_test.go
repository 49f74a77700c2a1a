package sse_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/gatehouse-dev/gatehouse/codecs/sse"
)

func TestAppendEvent(t *testing.T) {
	tests := []struct {
		name, event, data, want string
	}{
		{"data only", "", `{"a":1}`, "data: {\"a\":1}\n\n"},
		{"named", "progress", `{"processed":1}`, "event: progress\ndata: {\"processed\":1}\n\n"},
		{"multi-line", "", "a\nb", "data: a\ndata: b\n\n"},
		{"crlf normalised", "", "a\r\nb", "data: a\ndata: b\n\n"},
		{"lone cr", "", "a\rb", "data: a\ndata: b\n\n"},
		{"empty", "", "", "data: \n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(sse.AppendEvent(nil, tt.event, []byte(tt.data))); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAccepts(t *testing.T) {
	for accept, want := range map[string]bool{
		"text/event-stream":                         true,
		"application/json, text/event-stream;q=0.9": true,
		"TEXT/EVENT-STREAM":                         true,
		"application/json":                          false,
		"":                                          false,
		"text/event-streamer":                       false,
	} {
		if got := sse.Accepts(accept); got != want {
			t.Errorf("Accepts(%q) = %v", accept, got)
		}
	}
}

func FuzzAppendEvent(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, b := range fuzzseed.Frames(f, fuzzseed.MCPResponse, fuzzseed.NEKTEResponse) {
		f.Add("message", string(b))
	}
	f.Add("progress", "a\nb\r\nc")
	f.Fuzz(func(t *testing.T, name, data string) {
		if strings.ContainsAny(name, "\r\n") {
			return
		}
		frame := string(sse.AppendEvent(nil, name, []byte(data)))
		if !strings.HasSuffix(frame, "\n\n") || strings.Contains(strings.TrimSuffix(frame, "\n\n"), "\n\n") {
			t.Fatalf("frame %q is not exactly one event", frame)
		}
		// Joining the data lines back gives the payload, with CRLF normalised to LF.
		var lines []string
		for l := range strings.SplitSeq(strings.TrimSuffix(frame, "\n\n"), "\n") {
			if v, ok := strings.CutPrefix(l, "data: "); ok {
				lines = append(lines, v)
			}
		}
		want := strings.ReplaceAll(strings.ReplaceAll(data, "\r\n", "\n"), "\r", "\n")
		if got := strings.Join(lines, "\n"); got != want {
			t.Fatalf("payload %q came back as %q", data, got)
		}
	})
}
