package server

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// fakeStream is a stream of fixed messages, then err (io.EOF when nil); with hang set it
// waits for ctx or Close after the last message instead.
type fakeStream struct {
	msgs []string
	err  error
	hang bool

	mu       sync.Mutex
	next     int
	closed   chan struct{}
	closeOne sync.Once
}

func newFakeStream(err error, hang bool, msgs ...string) *fakeStream {
	return &fakeStream{msgs: msgs, err: err, hang: hang, closed: make(chan struct{})}
}

func (s *fakeStream) Recv(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	if s.next < len(s.msgs) {
		m := s.msgs[s.next]
		s.next++
		s.mu.Unlock()
		return []byte(m), nil
	}
	s.mu.Unlock()
	if s.hang {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.closed:
			return nil, io.EOF
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	return nil, io.EOF
}

func (s *fakeStream) Close() error {
	s.closeOne.Do(func() { close(s.closed) })
	return nil
}

// eventTarget answers every call with a stream of named events made by newStream.
type eventTarget struct {
	newStream func() *fakeStream

	mu      sync.Mutex
	streams []*fakeStream
}

func (e *eventTarget) Name() string { return "events" }

func (e *eventTarget) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	s := e.newStream()
	e.mu.Lock()
	e.streams = append(e.streams, s)
	e.mu.Unlock()
	return &gateway.Result{Stream: s, Events: true}, nil
}

func (e *eventTarget) last() *fakeStream {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.streams) == 0 {
		return nil
	}
	return e.streams[len(e.streams)-1]
}

// taskEvents are the messages of a short delegated task; the complete event's payload is
// written over several lines, as a target might.
var taskEvents = []string{
	`{"event":"progress","data":{"processed":1,"total":2,"message":"half <way> & more"}}`,
	`{"event":"status_change","data":{"task_id":"t-1","from":"pending","to":"running"}}`,
	"{\"event\":\"complete\",\"data\":{\n  \"task_id\": \"t-1\",\n  \"status\": \"completed\",\n  \"out\": {\"minimal\": \"ok\"}\n}}",
}

// taskFrames are taskEvents as Server-Sent Events, byte for byte.
const taskFrames = "event: progress\ndata: {\"processed\":1,\"total\":2,\"message\":\"half <way> & more\"}\n\n" +
	"event: status_change\ndata: {\"task_id\":\"t-1\",\"from\":\"pending\",\"to\":\"running\"}\n\n" +
	"event: complete\ndata: {\"task_id\":\"t-1\",\"status\":\"completed\",\"out\":{\"minimal\":\"ok\"}}\n\n"

func startEvents(t *testing.T, newStream func() *fakeStream) (*testServer, *eventTarget) {
	t.Helper()
	et := &eventTarget{newStream: newStream}
	return start(t, baseConfig, map[string]gateway.Target{"test.events": et}), et
}

const eventsCall = `{"jsonrpc":"2.0","method":"test.events","params":{},"id":1}`

// TestEventsOverHTTP checks the SSE answer to a result of named events: exactly the NEKTE
// headers and frames, whatever the Accept header and the request's encoding, and an error
// event when the stream fails.
func TestEventsOverHTTP(t *testing.T) {
	tests := []struct {
		name   string
		stream func() *fakeStream
		header []string
		body   []byte // MessagePack, when set
		want   string
	}{
		{"only Content-Type: application/json", func() *fakeStream { return newFakeStream(nil, false, taskEvents...) }, nil, nil, taskFrames},
		{"Accept: text/event-stream", func() *fakeStream { return newFakeStream(nil, false, taskEvents...) },
			[]string{"Accept", "text/event-stream"}, nil, taskFrames},
		{"a MessagePack request", func() *fakeStream { return newFakeStream(nil, false, taskEvents...) }, nil,
			[]byte(eventsCall), taskFrames},
		{"no events", func() *fakeStream { return newFakeStream(nil, false) }, nil, nil, ""},
		{"a stream that fails ends with an error event", func() *fakeStream {
			return newFakeStream(gateway.Errorf(schemas.CodeTaskFailed, "Task failed: t-1"), false, taskEvents[0])
		}, nil, nil, "event: progress\ndata: {\"processed\":1,\"total\":2,\"message\":\"half <way> & more\"}\n\n" +
			"event: error\ndata: {\"code\":-32007,\"message\":\"Task failed: t-1\"}\n\n"},
		{"a malformed event ends the stream", func() *fakeStream {
			return newFakeStream(nil, false, taskEvents[0], `{"event":"bad\nname","data":{}}`, taskEvents[1])
		}, nil, nil, "event: progress\ndata: {\"processed\":1,\"total\":2,\"message\":\"half <way> & more\"}\n\n" +
			"event: error\ndata: {\"code\":-32603,\"message\":\"Internal error\"}\n\n"},
		{"an event without data ends the stream", func() *fakeStream {
			return newFakeStream(nil, false, `{"event":"progress"}`)
		}, nil, nil, "event: error\ndata: {\"code\":-32603,\"message\":\"Internal error\"}\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, et := startEvents(t, tt.stream)
			var resp *http.Response
			if tt.body != nil {
				resp = postRaw(t, ts, msgpackContentType, mpFromJSON(t, string(tt.body)), tt.header...)
			} else {
				resp = postRaw(t, ts, "application/json", []byte(eventsCall), tt.header...)
			}
			defer func() { _ = resp.Body.Close() }()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			checkEventHeaders(t, resp)
			if string(body) != tt.want {
				t.Fatalf("body:\n%q\nwant:\n%q", body, tt.want)
			}
			select {
			case <-et.last().closed:
			case <-time.After(5 * time.Second):
				t.Fatal("the stream was not closed")
			}
		})
	}
}

const msgpackContentType = "application/x-msgpack"

// postRaw posts body to /rpc with a content type and headers, returning the response
// unread.
func postRaw(t *testing.T, ts *testServer, contentType string, body []byte, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.base+"/rpc", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func checkEventHeaders(t *testing.T, resp *http.Response) {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	want := map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}
	for k, v := range want {
		if got := resp.Header.Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("header %s: %q, want %q", k, got, v)
		}
	}
}

// TestEventsReachTheCallerAsTheyCome reads the first event while the stream is still open,
// then disconnects: the stream is closed, and nothing more is asked of it.
func TestEventsReachTheCallerAsTheyCome(t *testing.T) {
	ts, et := startEvents(t, func() *fakeStream { return newFakeStream(nil, true, taskEvents[0]) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.base+"/rpc", strings.NewReader(eventsCall))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	checkEventHeaders(t, resp)
	r := bufio.NewReader(resp.Body)
	var frame strings.Builder
	for !strings.HasSuffix(frame.String(), "\n\n") {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the first event: %v (so far %q)", err, frame.String())
		}
		frame.WriteString(line)
	}
	if frame.String() != "event: progress\ndata: {\"processed\":1,\"total\":2,\"message\":\"half <way> & more\"}\n\n" {
		t.Fatalf("first frame %q", frame.String())
	}
	select {
	case <-et.last().closed:
		t.Fatal("the stream was closed while the caller was reading it")
	case <-time.After(50 * time.Millisecond):
	}
	cancel() // the caller goes away
	select {
	case <-et.last().closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream was not closed when the caller went away")
	}
}

// TestEventsInABatchAreCollected checks the documented choice: a batch member's events
// are its array result, bounded by the call's deadline.
func TestEventsInABatchAreCollected(t *testing.T) {
	var hang atomic.Bool
	ts, et := startEvents(t, func() *fakeStream { return newFakeStream(nil, hang.Load(), taskEvents[:2]...) })
	batch := `[` + eventsCall + `,{"jsonrpc":"2.0","method":"subtract","params":[3,1],"id":2}]`
	_, _, body := ts.post(batch)
	want := `[{"jsonrpc":"2.0","result":[` + taskEvents[0] + `,` + taskEvents[1] + `],"id":1},{"jsonrpc":"2.0","result":2,"id":2}]`
	if body != want {
		t.Fatalf("got  %s\nwant %s", body, want)
	}
	hang.Store(true) // a task that outlives the batch's deadline
	// The deadline the header names, to the millisecond (X-Deadline-Ms has no finer unit).
	deadline := time.UnixMilli(time.Now().Add(300 * time.Millisecond).UnixMilli())
	_, _, body = ts.post(batch, "X-Deadline-Ms", strconv.FormatInt(deadline.UnixMilli(), 10))
	rs := decodeMany(t, body)
	if len(rs) != 2 || rs[0].Error == nil || rs[0].Error.Code != int(schemas.CodeDeadlineExceeded) || string(rs[1].Result) != "2" {
		t.Fatalf("got %s", body)
	}
	if time.Now().Before(deadline) {
		t.Fatal("answered before the deadline")
	}
	select {
	case <-et.last().closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream was not closed")
	}
}

// TestEventsOverWebSocket checks the $/event notifications and the final response, in
// either encoding, and the error that ends a failed stream.
func TestEventsOverWebSocket(t *testing.T) {
	var fail atomic.Bool
	ts, _ := startEvents(t, func() *fakeStream {
		if fail.Load() {
			return newFakeStream(gateway.Errorf(schemas.CodeTaskFailed, "Task failed: t-1"), false, taskEvents[0])
		}
		return newFakeStream(nil, false, taskEvents...)
	})
	want := []string{
		`{"jsonrpc":"2.0","method":"$/event","params":{"id":"e","event":"progress","data":{"processed":1,"total":2,"message":"half <way> & more"}}}`,
		`{"jsonrpc":"2.0","method":"$/event","params":{"id":"e","event":"status_change","data":{"task_id":"t-1","from":"pending","to":"running"}}}`,
		`{"jsonrpc":"2.0","method":"$/event","params":{"id":"e","event":"complete","data":{"task_id":"t-1","status":"completed","out":{"minimal":"ok"}}}}`,
		`{"jsonrpc":"2.0","result":{"events":3},"id":"e"}`,
	}
	call := strings.Replace(eventsCall, `"id":1`, `"id":"e"`, 1)
	t.Run("text", func(t *testing.T) {
		c := dialWS(t, ts, nil)
		wsSend(t, c, call)
		for i, w := range want {
			if got := wsRead(t, c, 5*time.Second); got != w {
				t.Fatalf("message %d: %s\nwant %s", i, got, w)
			}
		}
	})
	t.Run("binary", func(t *testing.T) {
		c := dialWS(t, ts, nil)
		if err := c.WriteMessage(websocket.BinaryMessage, mpFromJSON(t, call)); err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			if got := wsReadBinary(t, c, 5*time.Second); got != w {
				t.Fatalf("message %d: %s\nwant %s", i, got, w)
			}
		}
	})
	t.Run("failed stream", func(t *testing.T) {
		fail.Store(true)
		c := dialWS(t, ts, nil)
		wsSend(t, c, call)
		if got := wsRead(t, c, 5*time.Second); got != want[0] {
			t.Fatalf("first: %s", got)
		}
		r := decodeOne(t, wsRead(t, c, 5*time.Second))
		if r.Error == nil || r.Error.Code != int(schemas.CodeTaskFailed) || r.Error.Message != "Task failed: t-1" || string(r.ID) != `"e"` {
			t.Fatalf("final: %+v", r)
		}
	})
}
