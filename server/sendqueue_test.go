package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/codecs/sse"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func TestQueuedBytesAtTheEdge(t *testing.T) {
	tests := []struct {
		name  string
		held  int // already queued
		n     int
		limit int64
		ok    bool
	}{
		{"fits exactly", 60, 40, 100, true},
		{"one byte over", 60, 41, 100, false},
		{"an empty queue takes a message larger than the limit", 0, 500, 100, true},
		{"a non-empty one does not", 1, 500, 100, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q queuedBytes
			if tt.held > 0 && !q.take(tt.held, tt.limit) {
				t.Fatal("setup")
			}
			if got := q.take(tt.n, tt.limit); got != tt.ok {
				t.Fatalf("take(%d) with %d of %d queued = %v, want %v", tt.n, tt.held, tt.limit, got, tt.ok)
			}
			want := int64(tt.held)
			if tt.ok {
				want += int64(tt.n)
			}
			if q.n.Load() != want || q.peak.Load() != want {
				t.Fatalf("queued %d (peak %d), want %d", q.n.Load(), q.peak.Load(), want)
			}
			q.give(int(want))
			if q.n.Load() != 0 || q.peak.Load() != want {
				t.Fatalf("after give: queued %d, peak %d", q.n.Load(), q.peak.Load())
			}
		})
	}
}

// TestWSSendQueueAtTheEdge: with nobody writing, exactly send_queue messages (or
// send_queue_bytes bytes) wait; the next one, finding no room within half write_timeout,
// disconnects the consumer with 1008 and the slow-consumer reason, and its calls are
// abandoned.
func TestWSSendQueueAtTheEdge(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","result":"` + strings.Repeat("x", 100) + `","id":1}`)
	n := int64(len(msg))
	tests := []struct {
		name    string
		queue   int
		bytes   int64
		fit     int
		byBytes bool
	}{
		{"send_queue", 3, 1 << 20, 3, false},
		{"send_queue_bytes", 100, 4 * n, 4, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{log: slog.New(slog.DiscardHandler)}
			c := newWSConn(s, nil, WebSocketConfig{SendQueue: tt.queue, SendQueueBytes: tt.bytes, WriteTimeout: 20 * time.Millisecond}, gateway.Principal{})
			for i := range tt.fit {
				c.enqueue(encodingJSON, bytes.Clone(msg))
				if c.ctx.Err() != nil {
					t.Fatalf("disconnected at message %d of %d", i+1, tt.fit)
				}
			}
			if got := c.send.bytes.n.Load(); got != int64(tt.fit)*n {
				t.Fatalf("%d bytes queued, want %d", got, int64(tt.fit)*n)
			}
			c.enqueue(encodingJSON, bytes.Clone(msg))
			select {
			case <-c.closing:
			default:
				t.Fatal("one message past the limit did not disconnect the consumer")
			}
			if c.ctx.Err() == nil || c.closeCode != 1008 || c.closeText != closeReasonSlow {
				t.Fatalf("close %d %q, calls cancelled %v", c.closeCode, c.closeText, c.ctx.Err() != nil)
			}
			if len(c.send.ch) != tt.fit || c.send.bytes.peak.Load() != int64(tt.fit)*n {
				t.Fatalf("queue holds %d messages, peak %d bytes: the refused one was kept", len(c.send.ch), c.send.bytes.peak.Load())
			}
		})
	}
	t.Run("progress stops at half", func(t *testing.T) {
		s := &Server{log: slog.New(slog.DiscardHandler)}
		c := newWSConn(s, nil, WebSocketConfig{SendQueue: 100, SendQueueBytes: 4 * n}, gateway.Principal{})
		offered := 0
		for c.offer(encodingJSON, bytes.Clone(msg)) {
			offered++
		}
		if offered != 2 || c.ctx.Err() != nil {
			t.Fatalf("%d reports taken (want 2: half of 4 messages' bytes); disconnected %v", offered, c.ctx.Err() != nil)
		}
	})
}

// TestSendQueueWaitsForRoom: a producer that finds the queue full is not cut off while the
// writer makes room within the wait (a burst is slowed, not punished); one that finds none
// in time, or whose context ends, gets false.
func TestSendQueueWaitsForRoom(t *testing.T) {
	size := func(b []byte) int { return len(b) }
	t.Run("room made in time", func(t *testing.T) {
		q := newSendQueue(1, 1<<20, size)
		if !q.tryPush([]byte("a"), 1, 1<<20) {
			t.Fatal("setup")
		}
		got := make(chan bool, 1)
		go func() { got <- q.push(context.Background(), []byte("b"), time.Minute) }()
		q.taken(<-q.ch) // the writer takes one
		if !<-got {
			t.Fatal("a producer was refused although the writer made room")
		}
		if string(<-q.ch) != "b" {
			t.Fatal("the waiting message was not queued")
		}
	})
	t.Run("no room in time", func(t *testing.T) {
		q := newSendQueue(1, 1<<20, size)
		q.tryPush([]byte("a"), 1, 1<<20)
		if q.push(context.Background(), []byte("b"), 10*time.Millisecond) {
			t.Fatal("queued past the limit")
		}
	})
	t.Run("context ends", func(t *testing.T) {
		q := newSendQueue(1, 1<<20, size)
		q.tryPush([]byte("a"), 1, 1<<20)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if q.push(ctx, []byte("b"), time.Minute) {
			t.Fatal("queued past the limit")
		}
	})
}

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
				ge.Data()["reason"] != closeReasonSlow {
				t.Fatalf("one event past the limit: %v (data %v)", err, dataOf(ge))
			}
			if peak := sw.q.bytes.peak.Load(); peak > int64(tt.fit)*frame {
				t.Fatalf("peak %d bytes queued, want at most %d", peak, int64(tt.fit)*frame)
			}
			if err := sw.send("", data); !errors.Is(err, ge) {
				t.Fatalf("a send after the cut: %v", err)
			}
			final := appendError(nil, jsonrpc.NumberID(1), ge, "0123456789abcdef0123456789abcdef")
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
