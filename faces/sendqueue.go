package faces

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// CloseReasonSlow is why a consumer that cannot keep up is disconnected: the WebSocket
// close reason, and the reason in the error that ends an event stream.
const CloseReasonSlow = "slow consumer: send queue full"

// SendQueue is what waits to be written to one consumer (a WebSocket connection, an
// event stream): a FIFO bounded in messages and in bytes, filled by producers that never
// wait longer than a bound and drained by the consumer's one writer. A producer that finds
// no room waits for the writer to free some, up to its bound (SlowConsumerWait: half the
// consumer's write timeout); a queue that stays full that long belongs to a consumer that
// cannot keep up. Memory held for a consumer is therefore at most its limits, however fast
// its backends produce: bursts are absorbed by the queue and slowed to the consumer's
// pace, and a consumer that stops reading is found within half a write timeout of its
// queue filling — before the write it is stuck on times out, so that the reason can still
// reach it if it reads again.
type SendQueue[T any] struct {
	ch       chan T
	bytes    queuedBytes
	maxBytes int64
	size     func(T) int

	mu   sync.Mutex
	room chan struct{} // closed when the writer takes a message; nil when nobody waits
}

func NewSendQueue[T any](maxMessages int, maxBytes int64, size func(T) int) *SendQueue[T] {
	return &SendQueue[T]{ch: make(chan T, max(maxMessages, 1)), maxBytes: maxBytes, size: size}
}

// TryPush queues v when fewer than maxMessages are queued and its bytes fit under
// maxBytes; it never waits.
func (q *SendQueue[T]) TryPush(v T, maxMessages int, maxBytes int64) bool {
	n := q.size(v)
	if len(q.ch) >= max(maxMessages, 1) || !q.bytes.take(n, maxBytes) {
		return false
	}
	select {
	case q.ch <- v:
		return true
	default:
		q.bytes.give(n)
		return false
	}
}

// Push queues v within the queue's limits, waiting up to wait for room (ctx ending stops
// the wait); false means there was none: the consumer cannot keep up.
func (q *SendQueue[T]) Push(ctx context.Context, v T, wait time.Duration) bool {
	if q.TryPush(v, cap(q.ch), q.maxBytes) {
		return true
	}
	if wait <= 0 {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		room := q.waitRoom()
		if q.TryPush(v, cap(q.ch), q.maxBytes) {
			return true
		}
		select {
		case <-room:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Chan returns the queue's channel: the consumer's writer receives from it (calling Taken
// for each message), and whoever finishes the stream closes it.
func (q *SendQueue[T]) Chan() chan T { return q.ch }

// Len returns how many messages are queued.
func (q *SendQueue[T]) Len() int { return len(q.ch) }

// Cap returns how many messages the queue holds at most.
func (q *SendQueue[T]) Cap() int { return cap(q.ch) }

// Peak returns the most bytes ever queued at once.
func (q *SendQueue[T]) Peak() int64 { return q.bytes.peak.Load() }

// Bytes returns how many bytes are queued.
func (q *SendQueue[T]) Bytes() int64 { return q.bytes.n.Load() }

// PushFinal queues v whatever the limits, waiting for room as long as it takes: the last
// message of a stream, which its writer is draining.
func (q *SendQueue[T]) PushFinal(v T) {
	q.bytes.take(q.size(v), math.MaxInt64)
	q.ch <- v
}

// waitRoom returns a channel closed the next time the writer takes a message.
func (q *SendQueue[T]) waitRoom() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.room == nil {
		q.room = make(chan struct{})
	}
	return q.room
}

// Taken is called by the writer for each message it takes from ch: its bytes leave the
// count and producers waiting for room wake up.
func (q *SendQueue[T]) Taken(v T) {
	q.bytes.give(q.size(v))
	q.mu.Lock()
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
	q.mu.Unlock()
}

// Drop discards what is queued (a slow consumer's) without writing it.
func (q *SendQueue[T]) Drop() {
	for {
		select {
		case v := <-q.ch:
			q.Taken(v)
		default:
			return
		}
	}
}

// queuedBytes counts the bytes of the messages waiting in a send queue.
type queuedBytes struct {
	n    atomic.Int64
	peak atomic.Int64 // the most ever queued at once
}

// take counts n more bytes unless that would pass limit. A message larger than limit is
// taken when nothing else is queued (it could never be sent otherwise), so the queue
// holds at most max(limit, one message).
func (q *queuedBytes) take(n int, limit int64) bool {
	for {
		cur := q.n.Load()
		next := cur + int64(n)
		if cur > 0 && next > limit {
			return false
		}
		if q.n.CompareAndSwap(cur, next) {
			for p := q.peak.Load(); next > p && !q.peak.CompareAndSwap(p, next); p = q.peak.Load() {
			}
			return true
		}
	}
}

// give uncounts n bytes that left the queue.
func (q *queuedBytes) give(n int) { q.n.Add(-int64(n)) }

// SlowConsumerWait is how long a producer waits for room in the send queue of a consumer
// whose writes may take writeTimeout.
func SlowConsumerWait(writeTimeout time.Duration) time.Duration { return writeTimeout / 2 }

// ErrSlowConsumer ends a stream whose consumer let its send queue stay full.
func ErrSlowConsumer(limit string, maxValue int64) *gateway.Error {
	return gateway.Errorf(schemas.CodeOverloaded, "Slow consumer: the stream's send queue is full").
		With("reason", CloseReasonSlow).With("limit", limit).With("max", maxValue)
}

// Outbox is a SendQueue for a consumer whose writer runs only while there is something to
// send: the same bounds, producers' wait and slow-consumer rule, but no channel. Its
// storage is allocated as messages arrive, grown up to its bound in messages, and released
// when it drains, so that an idle consumer holds none; the writer takes messages with Pop.
type Outbox[T any] struct {
	maxMessages int
	maxBytes    int64
	size        func(T) int
	bytes       queuedBytes

	mu      sync.Mutex
	buf     []T // a ring of len(buf) slots, nil when empty
	head, n int
	room    chan struct{} // closed when the writer takes a message; nil when nobody waits
}

// outboxFirstSlots is how many slots an empty Outbox allocates for its first message.
const outboxFirstSlots = 4

// NewOutbox returns an empty Outbox bounded by maxMessages (at least 1) and maxBytes; it
// allocates nothing until a message is pushed.
func NewOutbox[T any](maxMessages int, maxBytes int64, size func(T) int) *Outbox[T] {
	return &Outbox[T]{maxMessages: max(maxMessages, 1), maxBytes: maxBytes, size: size}
}

// TryPush queues v when fewer than maxMessages (at most the queue's bound) are queued and
// its bytes fit under maxBytes; it never waits.
func (q *Outbox[T]) TryPush(v T, maxMessages int, maxBytes int64) bool {
	n := q.size(v)
	limit := min(max(maxMessages, 1), q.maxMessages)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n >= limit || !q.bytes.take(n, maxBytes) {
		return false
	}
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)%len(q.buf)] = v
	q.n++
	return true
}

// grow doubles the ring (from outboxFirstSlots), never past the bound; q.mu is held.
func (q *Outbox[T]) grow() {
	size := min(max(2*len(q.buf), outboxFirstSlots), q.maxMessages)
	buf := make([]T, size)
	for i := range q.n {
		buf[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = buf, 0
}

// Push queues v within the queue's limits, waiting up to wait for room (ctx ending stops
// the wait); false means there was none: the consumer cannot keep up.
func (q *Outbox[T]) Push(ctx context.Context, v T, wait time.Duration) bool {
	if q.TryPush(v, q.maxMessages, q.maxBytes) {
		return true
	}
	if wait <= 0 {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		room := q.waitRoom()
		if q.TryPush(v, q.maxMessages, q.maxBytes) {
			return true
		}
		select {
		case <-room:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// waitRoom returns a channel closed the next time the writer takes a message.
func (q *Outbox[T]) waitRoom() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.room == nil {
		q.room = make(chan struct{})
	}
	return q.room
}

// Pop takes the oldest message for the writer, false when none is queued: its bytes leave
// the count and producers waiting for room wake up. The storage is released when the
// queue drains.
func (q *Outbox[T]) Pop() (T, bool) {
	var zero T
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return zero, false
	}
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	if q.n == 0 {
		q.buf, q.head = nil, 0
	}
	q.bytes.give(q.size(v))
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
	return v, true
}

// Len returns how many messages are queued.
func (q *Outbox[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// Cap returns how many messages the queue holds at most.
func (q *Outbox[T]) Cap() int { return q.maxMessages }

// Slots returns how many messages the storage allocated now can hold (0 when empty).
func (q *Outbox[T]) Slots() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.buf)
}

// Peak returns the most bytes ever queued at once.
func (q *Outbox[T]) Peak() int64 { return q.bytes.peak.Load() }

// Bytes returns how many bytes are queued.
func (q *Outbox[T]) Bytes() int64 { return q.bytes.n.Load() }

// Drop discards what is queued (a slow consumer's) without writing it.
func (q *Outbox[T]) Drop() {
	for {
		if _, ok := q.Pop(); !ok {
			return
		}
	}
}
