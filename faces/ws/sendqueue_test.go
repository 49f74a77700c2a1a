package ws

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/faces"
)

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
			f := New(nil, slog.New(slog.DiscardHandler))
			c := newConn(f, nil, Config{SendQueue: tt.queue, SendQueueBytes: tt.bytes, WriteTimeout: 20 * time.Millisecond})
			for i := range tt.fit {
				c.enqueue(faces.EncodingJSON, bytes.Clone(msg))
				if c.ctx.Err() != nil {
					t.Fatalf("disconnected at message %d of %d", i+1, tt.fit)
				}
			}
			if got := c.send.Bytes(); got != int64(tt.fit)*n {
				t.Fatalf("%d bytes queued, want %d", got, int64(tt.fit)*n)
			}
			c.enqueue(faces.EncodingJSON, bytes.Clone(msg))
			select {
			case <-c.w.Closing():
			default:
				t.Fatal("one message past the limit did not disconnect the consumer")
			}
			if code, text := c.w.CloseCode(); c.ctx.Err() == nil || code != 1008 || text != faces.CloseReasonSlow {
				t.Fatalf("close %d %q, calls cancelled %v", code, text, c.ctx.Err() != nil)
			}
			if c.send.Len() != tt.fit || c.send.Peak() != int64(tt.fit)*n {
				t.Fatalf("queue holds %d messages, peak %d bytes: the refused one was kept", c.send.Len(), c.send.Peak())
			}
		})
	}
	t.Run("progress stops at half", func(t *testing.T) {
		f := New(nil, slog.New(slog.DiscardHandler))
		c := newConn(f, nil, Config{SendQueue: 100, SendQueueBytes: 4 * n})
		offered := 0
		for c.offer(faces.EncodingJSON, bytes.Clone(msg)) {
			offered++
		}
		if offered != 2 || c.ctx.Err() != nil {
			t.Fatalf("%d reports taken (want 2: half of 4 messages' bytes); disconnected %v", offered, c.ctx.Err() != nil)
		}
	})
}
