package state

import (
	"context"
	"fmt"
	"sync"
)

// DefaultBusBuffer is how many undelivered messages a [Subscription] holds before it
// drops the oldest.
const DefaultBusBuffer = 64

// subscription is the [Subscription] of both backends: a bounded buffer that drops its
// oldest message rather than block a sender, closed once.
type subscription struct {
	c       chan []byte
	mu      sync.Mutex // guards closed and stop, serializes deliver and the closing of c
	closed  bool
	stop    func() bool // stops the watch on the Subscribe context
	once    sync.Once
	release func() // the backend's part of Close, run before c is closed
}

var _ Subscription = (*subscription)(nil)

// newSubscription returns a subscription of buffer messages; release is the backend's
// part of Close. The backend calls watch once the subscription is registered.
func newSubscription(buffer int, release func()) *subscription {
	return &subscription{c: make(chan []byte, buffer), release: release}
}

// watch closes the subscription when ctx is done.
func (s *subscription) watch(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stop = context.AfterFunc(ctx, func() { _ = s.Close() })
}

// C implements [Subscription.C].
func (s *subscription) C() <-chan []byte { return s.c }

// Close implements [Subscription.Close].
func (s *subscription) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		stop := s.stop
		s.mu.Unlock()
		if stop != nil {
			stop()
		}
		s.release()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closed = true
		close(s.c)
	})
	return nil
}

// deliver queues msg, dropping the oldest queued message when the buffer is full. It
// never blocks, and does nothing once the subscription is closed.
func (s *subscription) deliver(msg []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for {
		select {
		case s.c <- msg:
			return
		default:
		}
		select {
		case <-s.c: // the oldest goes; senders hold mu, so there is room next round
		default:
		}
	}
}

// checkBus applies the rules Publish and Subscribe share: a closed store, a done
// context, a channel name over the key limit, a message over the value limit.
func checkBus(ctx context.Context, closed bool, limits Limits, channel string, msg []byte) error {
	if closed {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(channel) > limits.MaxKeyBytes {
		return fmt.Errorf("%w: channel name of %d bytes, the limit is %d", ErrTooLarge, len(channel), limits.MaxKeyBytes)
	}
	if len(msg) > limits.MaxValueBytes {
		return fmt.Errorf("%w: message of %d bytes, the limit is %d", ErrTooLarge, len(msg), limits.MaxValueBytes)
	}
	return nil
}
