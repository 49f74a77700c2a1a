package httprpc

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/codecs/sse"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// blockingWriter is an http.ResponseWriter whose writes wait until released, so that a
// stream's writer goroutine holds one frame while the test fills the queue.
type blockingWriter struct {
	header  http.Header
	entered chan struct{} // receives once per Write started
	release chan struct{} // closed to let writes through
	mu      sync.Mutex
	out     bytes.Buffer
}

func newBlockingWriter() *blockingWriter {
	return &blockingWriter{header: http.Header{}, entered: make(chan struct{}, 1024), release: make(chan struct{})}
}

func (w *blockingWriter) Header() http.Header { return w.header }
func (w *blockingWriter) WriteHeader(int)     {}
func (w *blockingWriter) Flush()              {}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.entered <- struct{}{}
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(p)
}

func (w *blockingWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

// TestSSESendQueueAtTheEdge: while the writer is stuck on one event, exactly
// sse.send_queue events (or sse.send_queue_bytes bytes) wait; the next one ends the
// stream as a slow consumer, what waits is dropped, and the response ends with one "error"
// event carrying the JSON-RPC error (5002, the reason) once the consumer can take it.
// Progress is dropped from half the queue on and never makes a consumer slow.
func TestSSESendQueueAtTheEdge(t *testing.T) {
	data := []byte(`{"jsonrpc":"2.0","method":"$/stream","params":{"id":1,"seq":0,"value":"` + strings.Repeat("x", 100) + `"}}`)
	frame := int64(len(sse.AppendEvent(nil, "", data)))
	tests := []struct {
		name      string
		limits    SSEConfig
		fit       int // events that wait besides the one being written
		limitName string
	}{
		{"send_queue", SSEConfig{SendQueue: 3, SendQueueBytes: 1 << 20}, 3, "sse.send_queue"},
		{"send_queue_bytes", SSEConfig{SendQueue: 100, SendQueueBytes: 4 * frame}, 4, "sse.send_queue_bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newBlockingWriter()
			sw := newSSEWriter(context.Background(), w, tt.limits, 20*time.Millisecond)
			if err := sw.send("", data); err != nil { // the writer takes it and blocks
				t.Fatal(err)
			}
			<-w.entered
			for i := range tt.fit {
				if err := sw.send("", data); err != nil {
					t.Fatalf("event %d of %d refused: %v", i+1, tt.fit, err)
				}
			}
			if sw.offer(data) {
				t.Fatal("a progress report was taken into a queue past half full")
			}
			err := sw.send("", data)
			var ge *gateway.Error
			if !errors.As(err, &ge) || ge.Code() != schemas.CodeOverloaded || ge.Data()["limit"] != tt.limitName ||
				ge.Data()["reason"] != faces.CloseReasonSlow {
				t.Fatalf("one event past the limit: %v (data %v)", err, dataOf(ge))
			}
			if peak := sw.q.Peak(); peak > int64(tt.fit)*frame {
				t.Fatalf("peak %d bytes queued, want at most %d", peak, int64(tt.fit)*frame)
			}
			if err := sw.send("", data); !errors.Is(err, ge) {
				t.Fatalf("a send after the cut: %v", err)
			}
			final := faces.AppendError(nil, jsonrpc.NumberID(1), ge, "0123456789abcdef0123456789abcdef")
			finished := make(chan struct{})
			go func() { sw.finish(finalResponse(final)); close(finished) }()
			waitFor(t, func() bool { // finish has dropped what waited (the writer is still stuck)
				sw.mu.Lock()
				defer sw.mu.Unlock()
				return sw.finished
			})
			close(w.release)
			<-finished
			want := string(sse.AppendEvent(nil, "", data)) + string(sse.AppendEvent(nil, "error", final))
			if got := w.String(); got != want {
				t.Fatalf("stream\n%q\nwant the event being written, then the error\n%q", got, want)
			}
		})
	}
}

func dataOf(e *gateway.Error) map[string]any {
	if e == nil {
		return nil
	}
	return e.Data()
}

// waitFor polls cond until it holds, failing the test after 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
