package state

import (
	"context"
	"sync"
)

// hub is the embedded store's [Bus]: an in-process fan-out to the subscriptions of each
// channel. Publish copies a message into every subscription's buffer and never waits.
type hub struct {
	mu     sync.RWMutex
	subs   map[string]map[*subscription]struct{}
	closed bool
	buffer int
}

func newHub(buffer int) *hub {
	return &hub{subs: make(map[string]map[*subscription]struct{}), buffer: buffer}
}

func (h *hub) publish(channel string, msg []byte) error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return ErrClosed
	}
	for s := range h.subs[channel] {
		s.deliver(clone(msg))
	}
	return nil
}

func (h *hub) subscribe(ctx context.Context, channel string) (*subscription, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	s := newSubscription(h.buffer, nil)
	s.release = func() { h.remove(channel, s) }
	set := h.subs[channel]
	if set == nil {
		set = make(map[*subscription]struct{})
		h.subs[channel] = set
	}
	set[s] = struct{}{}
	s.watch(ctx)
	return s, nil
}

func (h *hub) remove(channel string, s *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if set := h.subs[channel]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(h.subs, channel)
		}
	}
}

// close ends every subscription and refuses later calls.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	var all []*subscription
	for _, set := range h.subs {
		for s := range set {
			all = append(all, s)
		}
	}
	h.mu.Unlock()
	for _, s := range all {
		_ = s.Close()
	}
}

// Publish implements [Bus.Publish]: every subscription of channel in this process gets
// a copy of msg. A channel name counts against the key limit, a message against the value
// limit.
func (e *Embedded) Publish(ctx context.Context, channel string, msg []byte) error {
	if err := checkBus(ctx, e.closed.Load(), e.limits, channel, msg); err != nil {
		return err
	}
	return e.bus.publish(channel, msg)
}

// Subscribe implements [Bus.Subscribe]. The embedded store never reconnects, so its
// subscriptions never deliver nil.
func (e *Embedded) Subscribe(ctx context.Context, channel string) (Subscription, error) {
	if err := checkBus(ctx, e.closed.Load(), e.limits, channel, nil); err != nil {
		return nil, err
	}
	s, err := e.bus.subscribe(ctx, channel)
	if err != nil {
		return nil, err
	}
	return s, nil
}
