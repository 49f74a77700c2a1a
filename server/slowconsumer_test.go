package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// firehose is a test target whose result is a stream that never waits: message after
// message of size bytes, up to limit, as fast as the gateway reads them. It counts what
// the gateway took and knows when the gateway closed the stream.
type firehose struct {
	msg      []byte
	limit    int64
	produced atomic.Int64
	closed   chan struct{}
	once     sync.Once
}

func newFirehose(size int, limit int64) *firehose {
	return &firehose{msg: []byte(`"` + strings.Repeat("x", size-2) + `"`), limit: limit, closed: make(chan struct{})}
}

func (f *firehose) Name() string { return "firehose" }

func (f *firehose) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	return &gateway.Result{Stream: f}, nil
}

func (f *firehose) Recv(ctx context.Context) ([]byte, error) {
	select {
	case <-f.closed:
		return nil, gateway.AsError(context.Canceled)
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, gateway.AsError(err)
	}
	if f.produced.Load() >= f.limit {
		return nil, io.EOF
	}
	f.produced.Add(1)
	return f.msg, nil
}

func (f *firehose) Close() error {
	f.once.Do(func() { close(f.closed) })
	return nil
}

// waitClosed waits for the gateway to close the stream (bounded by 10s).
func (f *firehose) waitClosed(t *testing.T, what string) {
	t.Helper()
	select {
	case <-f.closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the gateway never stopped reading the stream (%d messages taken)", what, f.produced.Load())
	}
}

// TestChaosSlowWebSocketConsumer: a client that stops reading while the server streams to
// it is disconnected with close 1008 "slow consumer: send queue full" — whichever of
// websocket.send_queue and send_queue_bytes it fills — the stream it was fed is closed, and
// the gateway never held more for it than the limit (counted: what the gateway took from the
// stream less what the client received is at most the queue plus the one refused);
// another connection is served throughout.
func TestChaosSlowWebSocketConsumer(t *testing.T) {
	const size = 4 << 10
	tests := []struct {
		name  string
		ws    string
		extra int64 // what may be lost besides the refused message: the queue, in messages
	}{
		{"send_queue", "{send_queue: 16, write_timeout: 4s}", 16},
		{"send_queue_bytes", "{send_queue: 100000, send_queue_bytes: 65536, write_timeout: 4s}", 65536 / size},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hose := newFirehose(size, 200_000) // ~800 MB if never cut off
			ts := start(t, strings.Replace(baseConfig, "websocket: {}", "websocket: "+tt.ws, 1),
				map[string]gateway.Target{"hose": hose, "fast": &probe{}})
			slow := dialWS(t, ts, nil)
			other := dialWS(t, ts, nil)
			wsSend(t, slow, `{"jsonrpc":"2.0","method":"hose","id":1}`)
			// The slow client reads nothing until the gateway has given up on it.
			waitFor(t, func() bool { return strings.Contains(ts.logs.String(), "disconnecting slow WebSocket consumer") })
			hose.waitClosed(t, "slow consumer")
			for i := range 3 { // the other connection is served as usual
				wsSend(t, other, fmt.Sprintf(`{"jsonrpc":"2.0","method":"fast","id":%d}`, i))
				if r := decodeOne(t, wsRead(t, other, 5*time.Second)); r.Error != nil {
					t.Fatalf("the other connection: %+v", r.Error)
				}
			}
			received, closeErr := drainWS(t, slow)
			var ce *websocket.CloseError
			if !errors.As(closeErr, &ce) || ce.Code != websocket.ClosePolicyViolation || ce.Text != faces.CloseReasonSlow {
				t.Fatalf("the slow consumer ended with %v, want close 1008 %q", closeErr, faces.CloseReasonSlow)
			}
			// What waited when the consumer was cut off is dropped, not sent: about a queue's worth.
			if lost := hose.produced.Load() - received; lost <= tt.extra/2 || lost > tt.extra+1 {
				t.Fatalf("the gateway took %d messages, the client got %d: %d never sent, want (%d, %d] (the queue and the refused one)",
					hose.produced.Load(), received, lost, tt.extra/2, tt.extra+1)
			}
			wsSend(t, other, `{"jsonrpc":"2.0","method":"fast","id":9}`)
			if r := decodeOne(t, wsRead(t, other, 5*time.Second)); r.Error != nil {
				t.Fatalf("the other connection after the cut: %+v", r.Error)
			}
		})
	}
}

// drainWS reads a connection to its end and returns how many $/stream messages came and
// the error that ended it.
func drainWS(t *testing.T, c *websocket.Conn) (int64, error) {
	t.Helper()
	var n int64
	for {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, msg, err := c.ReadMessage()
		if err != nil {
			return n, err
		}
		if strings.Contains(string(msg), `"method":"$/stream"`) {
			n++
		}
	}
}

// TestChaosSlowSSEConsumer: a caller of a streamed result over SSE that stops reading is
// cut off once sse.send_queue (or send_queue_bytes) fills: the stream it was fed is closed,
// the response ends with one "event: error" carrying 5002 and the slow-consumer reason, and
// what the gateway took from the stream less what the caller received is at most the queue
// plus the one refused.
func TestChaosSlowSSEConsumer(t *testing.T) {
	const size = 4 << 10
	tests := []struct {
		name  string
		sse   string
		extra int64
	}{
		{"send_queue", "sse: {send_queue: 16}", 16},
		{"send_queue_bytes", "sse: {send_queue: 100000, send_queue_bytes: 65536}", 65536 / size},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hose := newFirehose(size, 200_000)
			yaml := strings.Replace(baseConfig, "  shutdown_grace: 5s\n", "  shutdown_grace: 5s\n"+tt.sse+"\n", 1)
			yaml = strings.Replace(yaml, `boundary: {addr: "127.0.0.1:0"}`, `boundary: {addr: "127.0.0.1:0", write_timeout: 4s}`, 1)
			ts := start(t, yaml, map[string]gateway.Target{"hose": hose, "fast": &probe{}})
			req, _ := http.NewRequest(http.MethodPost, ts.base+"/rpc", strings.NewReader(`{"jsonrpc":"2.0","method":"hose","id":1}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			// The caller reads nothing more until the gateway has given up on it.
			hose.waitClosed(t, "slow consumer")
			if status, _, _ := ts.post(`{"jsonrpc":"2.0","method":"fast","id":2}`); status != http.StatusOK {
				t.Fatalf("another caller got %d", status)
			}
			received, last := readEvents(t, resp.Body)
			if last.name != "error" {
				t.Fatalf("the stream ended with event %q %s, want an error event", last.name, last.data)
			}
			r := decodeOne(t, last.data)
			if r.Error == nil || r.Error.Code != 5002 || r.Error.Data["reason"] != faces.CloseReasonSlow || string(r.ID) != "1" {
				t.Fatalf("final event %s", last.data)
			}
			if lost := hose.produced.Load() - received; lost <= tt.extra/2 || lost > tt.extra+1 {
				t.Fatalf("the gateway took %d messages, the caller got %d: %d never sent, want (%d, %d] (the queue and the refused one)",
					hose.produced.Load(), received, lost, tt.extra/2, tt.extra+1)
			}
		})
	}
}

type sseEvent struct{ name, data string }

// readEvents reads an event stream to its end; it returns how many $/stream messages came
// and the last event.
func readEvents(t *testing.T, body io.Reader) (int64, sseEvent) {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var n int64
	var cur, last sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case line == "" && cur.data != "":
			if strings.Contains(cur.data, `"method":"$/stream"`) {
				n++
			}
			last, cur = cur, sseEvent{}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the event stream: %v", err)
	}
	var probe json.RawMessage
	if json.Unmarshal([]byte(last.data), &probe) != nil {
		t.Fatalf("last event's data is not JSON: %q", last.data)
	}
	return n, last
}
