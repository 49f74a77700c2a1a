package faces

import (
	"context"
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
