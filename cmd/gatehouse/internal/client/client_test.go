package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestClientCodeExit(t *testing.T) {
	tests := []struct {
		code int
		want int
	}{
		{-32700, ExitInvalid}, {-32600, ExitInvalid}, {-32601, ExitInvalid}, {-32602, ExitInvalid},
		{-32002, ExitInvalid}, {-32009, ExitInvalid}, {-32010, ExitInvalid}, {-32011, ExitInvalid},
		{-32000, ExitUnavailable}, {-32020, ExitUnavailable}, {-32021, ExitUnavailable}, {-32023, ExitUnavailable},
		{-32006, ExitUnavailable}, {1004, ExitUnavailable}, {1006, ExitUnavailable}, {5001, ExitUnavailable}, {5002, ExitUnavailable},
		{4000, ExitAuth}, {4001, ExitAuth}, {4002, ExitAuth}, {4003, ExitAuth}, {4004, ExitAuth},
		{-32603, ExitError}, {-32007, ExitError}, {1001, ExitError}, {-32024, ExitError}, {5003, ExitError}, {42, ExitError},
	}
	for _, tt := range tests {
		if got := CodeExit(tt.code); got != tt.want {
			t.Errorf("CodeExit(%d) = %d, want %d", tt.code, got, tt.want)
		}
	}
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{Usagef("x"), ExitUsage},
		{fmt.Errorf("wrapped: %w", &RPCError{Code: 4001}), ExitAuth},
		{&TransportError{Err: errors.New("refused")}, ExitTransport},
		{context.DeadlineExceeded, ExitUnavailable},
		{ErrInterrupted, ExitInterrupted},
	} {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestClientParseBatch(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   string // the members, joined by newlines
		withID int
		err    string
	}{
		{"lines", "# c\n{\"method\":\"a\"}\n\n{\"method\":\"b\",\"params\":[1],\"id\":\"x\"}\n",
			`{"id":1,"jsonrpc":"2.0","method":"a"}` + "\n" + `{"id":"x","jsonrpc":"2.0","method":"b","params":[1]}`, 2, ""},
		{"array", `[{"jsonrpc":"2.0","method":"a","id":7},{"method":"n","notification":true}]`,
			`{"id":7,"jsonrpc":"2.0","method":"a"}` + "\n" + `{"jsonrpc":"2.0","method":"n"}`, 1, ""},
		{"empty", "\n# nothing\n", "", 0, "no requests"},
		{"not JSON", "{\"method\":\"a\"}\nnope\n", "", 0, "line 2 is not JSON"},
		{"no method", `[{"params":[]}]`, "", 0, "member 1 has no method"},
		{"not an object", `[1]`, "", 0, "member 1 is not a JSON object"},
		{"notification with id", `[{"method":"a","id":1,"notification":true}]`, "", 0, "notification with an id"},
		{"bad array", `[{"method":"a"}`, "", 0, "not a JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, n, err := ParseBatch([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || ExitCode(err) != ExitUsage {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(ms))
			for i, m := range ms {
				got[i] = string(m)
			}
			if strings.Join(got, "\n") != tt.want || n != tt.withID {
				t.Fatalf("got %s (%d with id), want %s (%d)", strings.Join(got, "\n"), n, tt.want, tt.withID)
			}
		})
	}
}

func TestClientReadEvents(t *testing.T) {
	in := ": ping\n\nevent: progress\ndata: {\"processed\":1}\n\nevent: partial\ndata: {\"a\":\ndata: 1}\n\ndata: {\"x\":2}\n\nevent: error\ndata: {\"code\":-32007,\"message\":\"Task failed\"}\n\n"
	var got []string
	if err := ReadEvents(strings.NewReader(in), func(e Event) error {
		got = append(got, e.Name+" "+string(e.Data))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{`progress {"processed":1}`, "partial {\"a\":\n1}", `message {"x":2}`, `error {"code":-32007,"message":"Task failed"}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
	if e := (Event{Name: "error", Data: json.RawMessage(`{"code":-32007,"message":"Task failed"}`)}).AsError(); e.Code != -32007 {
		t.Fatalf("AsError: %+v", e)
	}
	if e := (Event{Name: "error", Data: json.RawMessage(`"oops"`)}).AsError(); e.Code != -32603 {
		t.Fatalf("AsError of a malformed event: %+v", e)
	}
}

// TestClientDelegateCancelsOnInterrupt: when ctx ends mid-stream, Delegate sends
// nekte.task.cancel for the task, shows the stream up to its cancelled event, and returns
// ErrInterrupted. The gateway is a stand-in that records what it was sent.
func TestClientDelegateCancelsOnInterrupt(t *testing.T) {
	var mu sync.Mutex
	var cancelled string
	cancelledCh := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch req.Method {
		case "nekte.task.cancel":
			mu.Lock()
			cancelled = string(req.Params)
			mu.Unlock()
			close(cancelledCh)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"task_id":"t","status":"cancelled","previous_status":"running"}}`))
		case "nekte.delegate":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("event: status_change\ndata: {\"task_id\":\"t\",\"from\":\"accepted\",\"to\":\"running\"}\n\n"))
			w.(http.Flusher).Flush()
			select {
			case <-cancelledCh:
				_, _ = w.Write([]byte("event: cancelled\ndata: {\"task_id\":\"t\",\"previous_status\":\"running\"}\n\n"))
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	c, err := New(Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, interrupt := context.WithCancel(context.Background())
	rec := &recorder{onEvent: func(e Event) {
		if e.Name == "status_change" {
			interrupt()
		}
	}}
	err = c.Delegate(ctx, &Task{ID: "t", Cap: "slow"}, rec)
	if !errors.Is(err, ErrInterrupted) || ExitCode(err) != ExitInterrupted {
		t.Fatalf("Delegate: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(cancelled, `"task_id":"t"`) {
		t.Fatalf("cancel params %q", cancelled)
	}
	if got := strings.Join(rec.names, ","); got != "status_change,cancelling,cancelled,close" {
		t.Fatalf("renderer saw %s", got)
	}
}

// TestClientDelegateStreamEndsEarly: a stream that ends without a final event is a
// transport error, not a success.
func TestClientDelegateStreamEndsEarly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: status_change\ndata: {}\n\n"))
	}))
	defer srv.Close()
	c, _ := New(Options{URL: srv.URL + "/rpc", Timeout: time.Second})
	err := c.Delegate(context.Background(), &Task{Cap: "x"}, &recorder{})
	if ExitCode(err) != ExitTransport {
		t.Fatalf("Delegate: %v", err)
	}
}

type recorder struct {
	names   []string
	onEvent func(Event)
}

func (r *recorder) Event(e Event) {
	r.names = append(r.names, e.Name)
	if r.onEvent != nil {
		r.onEvent(e)
	}
}
func (r *recorder) Cancelling(string) { r.names = append(r.names, "cancelling") }
func (r *recorder) Close(error)       { r.names = append(r.names, "close") }
