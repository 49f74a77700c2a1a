package state

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// busHealthInterval is how long a Redis subscription waits for a message before it
	// PINGs its connection, and then how long it waits for the answer before go-redis
	// replaces the connection as dead.
	busHealthInterval = 15 * time.Second
	// busRetryMin and busRetryMax bound the pause between attempts to reconnect a
	// subscription whose connection failed.
	busRetryMin = 50 * time.Millisecond
	busRetryMax = time.Second
)

// redisSub is one Redis subscription: a go-redis PubSub on a connection of its own, read
// by one goroutine that delivers to the shared subscription buffer.
type redisSub struct {
	*subscription
	ps     *redis.PubSub
	health time.Duration // busHealthInterval, shorter in tests
	cancel context.CancelFunc
	done   chan struct{}
}

// Publish implements [Bus.Publish] with PUBLISH key_prefix+channel msg: every subscriber
// of the channel in every process using the same Redis and prefix gets it. A channel
// name counts against the key limit, a message against the value limit.
//
// On Redis Cluster, a PUBLISH reaches the subscribers of every node (the cluster bus
// forwards it to all of them), but one sent to a node other than the subscriber's arrives
// later than one sent to the subscriber's own node, out of order. So it goes to the
// master of the channel name's hash slot, the node every subscription to that channel is
// on (see [Redis.Subscribe]): messages of one publisher arrive in order.
func (r *Redis) Publish(ctx context.Context, channel string, msg []byte) error {
	if err := checkBus(ctx, r.closed.Load(), r.limits, channel, msg); err != nil {
		return err
	}
	name := r.prefix + channel
	var pub redis.Cmdable = r.client
	if cluster, ok := r.client.(*redis.ClusterClient); ok {
		node, err := cluster.MasterForKey(ctx, name)
		if err != nil {
			return r.fail(ctx, err)
		}
		pub = node
	}
	return r.fail(ctx, pub.Publish(ctx, name, nonNil(msg)).Err())
}

// Subscribe implements [Bus.Subscribe] with SUBSCRIBE key_prefix+channel on a dedicated
// connection. It returns once Redis confirmed the subscription, so every message
// published after it returns is delivered. When the connection fails, the subscription
// reconnects and subscribes again by itself, then delivers one nil message. On Redis
// Cluster, the connection is to the master of the channel name's hash slot.
func (r *Redis) Subscribe(ctx context.Context, channel string) (Subscription, error) {
	if err := checkBus(ctx, r.closed.Load(), r.limits, channel, nil); err != nil {
		return nil, err
	}
	ps := r.client.Subscribe(ctx, r.prefix+channel)
	if err := confirm(ctx, ps, r.readTimeout); err != nil {
		_ = ps.Close()
		return nil, r.fail(ctx, err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s := &redisSub{ps: ps, health: r.busHealth, cancel: cancel, done: make(chan struct{})}
	s.subscription = newSubscription(r.busBuffer, nil)

	r.mu.Lock()
	if r.closed.Load() {
		r.mu.Unlock()
		cancel()
		_ = ps.Close()
		return nil, ErrClosed
	}
	r.subs[s] = struct{}{}
	r.mu.Unlock()
	s.release = func() {
		s.stopReading()
		r.mu.Lock()
		delete(r.subs, s)
		r.mu.Unlock()
	}
	go s.read(runCtx)
	s.watch(ctx)
	return s, nil
}

// confirm waits for the confirmation of the subscription, at most timeout.
func confirm(ctx context.Context, ps *redis.PubSub, timeout time.Duration) error {
	for {
		msg, err := ps.ReceiveTimeout(ctx, timeout)
		if err != nil {
			return err
		}
		if sub, ok := msg.(*redis.Subscription); ok && sub.Kind == "subscribe" {
			return nil
		}
	}
}

// stopReading ends the reading goroutine and waits for it.
func (s *redisSub) stopReading() {
	s.cancel()
	_ = s.ps.Close()
	<-s.done
}

// read delivers the subscription's messages until ctx is done. A confirmation received
// again means go-redis reconnected and subscribed again: something may have been missed,
// so it delivers nil. An idle connection is PINGed every s.health; a PING unanswered as long
// makes go-redis replace the connection.
func (s *redisSub) read(ctx context.Context) {
	defer close(s.done)
	pinged := false
	retry := busRetryMin
	for {
		msg, err := s.receive(ctx, pinged)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil:
			pinged, retry = false, busRetryMin
		case isTimeout(err) && !pinged:
			// Idle: check the connection. A failed write makes go-redis reconnect.
			pinged = s.ps.Ping(ctx) == nil
			continue
		default:
			// The connection failed or the PING went unanswered; go-redis dials again on the
			// next receive. Pause first, so a server that is down is not hammered.
			pinged = false
			if !sleep(ctx, retry) {
				return
			}
			retry = min(2*retry, busRetryMax)
			continue
		}
		switch m := msg.(type) {
		case *redis.Message:
			s.deliver(append([]byte{}, m.Payload...)) // non-nil even when empty: nil means "reconnected"
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				s.deliver(nil)
			}
		}
	}
}

// receive waits for the next message. After a PING it waits with a deadline of ctx's, so
// that go-redis treats a timeout as a dead connection; otherwise a timeout is only idleness.
func (s *redisSub) receive(ctx context.Context, pinged bool) (any, error) {
	if !pinged {
		return s.ps.ReceiveTimeout(ctx, s.health)
	}
	ctx, cancel := context.WithTimeout(ctx, s.health)
	defer cancel()
	return s.ps.Receive(ctx)
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// sleep waits d or until ctx is done, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// closeSubscriptions ends every subscription; Close calls it.
func (r *Redis) closeSubscriptions() {
	r.mu.Lock()
	all := make([]*redisSub, 0, len(r.subs))
	for s := range r.subs {
		all = append(all, s)
	}
	r.mu.Unlock()
	for _, s := range all {
		_ = s.Close()
	}
}
