package faces

import (
	"context"
	"fmt"
	"testing"
	"time"
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

// TestSendQueueWaitsForRoom: a producer that finds the queue full is not cut off while the
// writer makes room within the wait (a burst is slowed, not punished); one that finds none
// in time, or whose context ends, gets false.
func TestSendQueueWaitsForRoom(t *testing.T) {
	size := func(b []byte) int { return len(b) }
	t.Run("room made in time", func(t *testing.T) {
		q := NewSendQueue(1, 1<<20, size)
		if !q.TryPush([]byte("a"), 1, 1<<20) {
			t.Fatal("setup")
		}
		got := make(chan bool, 1)
		go func() { got <- q.Push(context.Background(), []byte("b"), time.Minute) }()
		q.Taken(<-q.Chan()) // the writer takes one
		if !<-got {
			t.Fatal("a producer was refused although the writer made room")
		}
		if string(<-q.Chan()) != "b" {
			t.Fatal("the waiting message was not queued")
		}
	})
	t.Run("no room in time", func(t *testing.T) {
		q := NewSendQueue(1, 1<<20, size)
		q.TryPush([]byte("a"), 1, 1<<20)
		if q.Push(context.Background(), []byte("b"), 10*time.Millisecond) {
			t.Fatal("queued past the limit")
		}
	})
	t.Run("context ends", func(t *testing.T) {
		q := NewSendQueue(1, 1<<20, size)
		q.TryPush([]byte("a"), 1, 1<<20)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if q.Push(ctx, []byte("b"), time.Minute) {
			t.Fatal("queued past the limit")
		}
	})
}

// TestOutboxAtTheEdge: an Outbox holds exactly its bounds in messages and bytes, as a
// SendQueue does, allocating nothing while empty, growing its storage only as messages
// arrive (never past the bound) and releasing it when it drains; messages leave in order.
func TestOutboxAtTheEdge(t *testing.T) {
	size := func(b []byte) int { return len(b) }
	tests := []struct {
		name      string
		messages  int
		bytes     int64
		push      int // 10-byte messages pushed
		queued    int
		wantSlots int
	}{
		{"one message allocates a few slots", 256, 1 << 20, 1, 1, outboxFirstSlots},
		{"grows by doubling", 256, 1 << 20, 5, 5, 2 * outboxFirstSlots},
		{"never past the message bound", 6, 1 << 20, 9, 6, 6},
		{"a bound of 0 holds one", 0, 1 << 20, 3, 1, 1},
		{"the byte bound", 256, 30, 9, 3, outboxFirstSlots},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewOutbox(tt.messages, tt.bytes, size)
			if q.Slots() != 0 {
				t.Fatalf("an empty outbox holds %d slots", q.Slots())
			}
			for i := range tt.push {
				q.TryPush([]byte(fmt.Sprintf("message %02d", i)), q.Cap(), tt.bytes)
			}
			if q.Len() != tt.queued || q.Bytes() != int64(10*tt.queued) || q.Slots() != tt.wantSlots {
				t.Fatalf("%d queued (%d bytes) in %d slots, want %d in %d", q.Len(), q.Bytes(), q.Slots(), tt.queued, tt.wantSlots)
			}
			if full := tt.queued < tt.push; full && q.Push(context.Background(), []byte("one more.."), time.Millisecond) {
				t.Fatal("queued past the bounds")
			}
			for i := range q.Len() {
				v, ok := q.Pop()
				if !ok || string(v) != fmt.Sprintf("message %02d", i) {
					t.Fatalf("pop %d: %q %v", i, v, ok)
				}
			}
			if _, ok := q.Pop(); ok || q.Slots() != 0 || q.Bytes() != 0 {
				t.Fatalf("drained outbox: %d slots, %d bytes", q.Slots(), q.Bytes())
			}
		})
	}
}
