package sessionrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

func TestSSEReader(t *testing.T) {
	cases := []struct {
		name   string
		stream string
		max    int
		want   []string
		err    error
	}{
		{"one event", "event: chat.event\ndata: {\"a\":1}\n\n", 64, []string{`{"a":1}`}, io.EOF},
		{"crlf and comments", ": hi\r\ndata: x\r\n\r\n:\n\ndata:y\n\n", 64, []string{"x", "y"}, io.EOF},
		{"multi-line data joined", "data: a\ndata: b\nid: 7\nretry: 10\n\n", 64, []string{"a\nb"}, io.EOF},
		{"blank lines without data dispatch nothing", "\n\n\nevent: x\n\ndata: z\n\n", 64, []string{"z"}, io.EOF},
		{"an event cut off at the end is dropped", "data: a\n\ndata: b\n", 64, []string{"a"}, io.EOF},
		{"a last line without terminator", "data: a\n\ndata: b", 64, []string{"a"}, io.EOF},
		{"event over the bound", "data: " + strings.Repeat("x", 100) + "\n\n", 64, nil, errEventTooLarge},
		{"data lines together over the bound", strings.Repeat("data: "+strings.Repeat("x", 30)+"\n", 3) + "\n", 64, nil, errEventTooLarge},
		{"line longer than the buffer, under the bound", "data: " + strings.Repeat("y", 5000) + "\n\n", 6000, []string{strings.Repeat("y", 5000)}, io.EOF},
		{"line longer than the buffer, over the bound", "data: " + strings.Repeat("y", 9000) + "\n\n", 6000, nil, errEventTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newSSEReader(strings.NewReader(c.stream), c.max)
			var got []string
			var err error
			for {
				var b []byte
				if b, err = r.next(); err != nil {
					break
				}
				got = append(got, string(b))
			}
			if !errors.Is(err, c.err) {
				t.Fatalf("err %v, want %v", err, c.err)
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("events %q, want %q", got, c.want)
			}
		})
	}
}

func TestRelay(t *testing.T) {
	const id = "rpc_1"
	cases := []struct {
		name   string
		msg    string
		action relayAction
		frame  string
		bad    bool
	}{
		{"event", `{"id":"rpc_1","type":"chat.event","payload":{"type":"text-delta","text":"hi","x":[1]}}`, relayFrame,
			`{"type":"chat.event","payload":{"type":"text-delta","text":"hi","x":[1]}}`, false},
		{"done without the upstream's task id", `{"id":"rpc_1","type":"chat.done","payload":{"taskId":"task_9","text":"ok"}}`, relayTerminal,
			`{"type":"chat.done","payload":{"text":"ok"}}`, false},
		{"done without payload", `{"id":"rpc_1","type":"chat.done"}`, relayTerminal, `{"type":"chat.done","payload":{}}`, false},
		{"error relayed", `{"id":"rpc_1","type":"chat.error","payload":{"errorId":"aborted","message":"m","code":-32024}}`, relayTerminal,
			`{"type":"chat.error","payload":{"errorId":"aborted","message":"m","code":-32024}}`, false},
		{"envelope error for the request", `{"id":"rpc_1","type":"error","payload":{"errorId":"bad_envelope","message":"no"}}`, relayTerminal,
			`{"type":"chat.error","payload":{"errorId":"bad_envelope","message":"no"}}`, false},
		{"envelope error without id", `{"id":"","type":"error","payload":{}}`, relaySkip, "", false},
		{"accepted dropped", `{"id":"rpc_1","type":"chat.accepted","payload":{"taskId":"task_1"}}`, relaySkip, "", false},
		{"queued dropped", `{"id":"rpc_1","type":"chat.queued","payload":{"position":1}}`, relaySkip, "", false},
		{"started dropped", `{"id":"rpc_1","type":"chat.started","payload":{}}`, relaySkip, "", false},
		{"another request's event", `{"id":"rpc_2","type":"chat.event","payload":{"type":"status"}}`, relaySkip, "", false},
		{"unknown type skipped", `{"id":"rpc_1","type":"chat.future","payload":{}}`, relaySkip, "", false},
		{"not JSON", `{"id":`, relaySkip, "", true},
		{"event payload not an object", `{"id":"rpc_1","type":"chat.event","payload":[1]}`, relaySkip, "", true},
		{"done payload not an object", `{"id":"rpc_1","type":"chat.done","payload":"x"}`, relaySkip, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, action, err := relay(id, []byte(c.msg))
			if c.bad {
				if err == nil || err.Code() != schemas.CodeUnavailable {
					t.Fatalf("err %v, want UNAVAILABLE (malformed)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if action != c.action || string(f) != c.frame {
				t.Fatalf("relay = %s, %d; want %s, %d", f, action, c.frame, c.action)
			}
		})
	}
}

// FuzzSSEReader: the reader never panics, never returns an event over its bound, and
// its events survive re-encoding (a data payload without line breaks reads back as itself).
func FuzzSSEReader(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.Add(f, fuzzseed.SSE)
	for _, s := range []string{"data: x\n\n", "event: a\r\ndata: {}\r\n\r\n", ": c\n\ndata:\n\n", "data: a\ndata: b\n\nda", "\r\r\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		const bound = 512
		r := newSSEReader(bytes.NewReader(stream), bound)
		for range 1000 {
			b, err := r.next()
			if err != nil {
				return
			}
			if len(b) > bound {
				t.Fatalf("event of %d bytes over the bound %d", len(b), bound)
			}
			if bytes.ContainsAny(b, "\r") {
				continue
			}
			again, err := newSSEReader(strings.NewReader("data: "+strings.ReplaceAll(string(b), "\n", "\ndata: ")+"\n\n"), bound).next()
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("event %q re-read as %q (%v)", b, again, err)
			}
		}
	})
}

// FuzzRelay: relay never panics, and whatever frame it yields is a JSON object whose
// type is chat.event, chat.done or chat.error and whose payload is an object.
func FuzzRelay(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.Add(f, fuzzseed.SessionResponse)
	for _, s := range []string{`{"id":"rpc_1","type":"chat.event","payload":{"type":"x"}}`, `{"id":"rpc_1","type":"chat.done","payload":{"taskId":1}}`,
		`{"id":"rpc_1","type":"error","payload":{"code":"x"}}`, `{"type":"chat.error"}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		out, action, err := relay("rpc_1", msg)
		if err != nil || action == relaySkip {
			if out != nil {
				t.Fatalf("a skipped or failed message yielded %s", out)
			}
			return
		}
		var fr struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if e := json.Unmarshal(out, &fr); e != nil {
			t.Fatalf("frame %s: %v", out, e)
		}
		if fr.Type != "chat.event" && fr.Type != "chat.done" && fr.Type != "chat.error" {
			t.Fatalf("frame type %q", fr.Type)
		}
		if !isObject(fr.Payload) {
			t.Fatalf("frame payload %s is not an object", fr.Payload)
		}
		if (action == relayTerminal) == (fr.Type == "chat.event") {
			t.Fatalf("action %d for a %s frame", action, fr.Type)
		}
	})
}

// BenchmarkRelay is the target's own work per relayed event: decoding the upstream's
// envelope and encoding the frame.
func BenchmarkRelay(b *testing.B) {
	msg := []byte(`{"id":"rpc_1","type":"chat.event","payload":{"type":"text-delta","text":"hello there, this is one chunk of a reply"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, action, err := relay("rpc_1", msg); err != nil || action != relayFrame {
			b.Fatal(err)
		}
	}
}
