package auth

import (
	"context"
	"time"

	"github.com/gatehouse-dev/gatehouse/state"
)

// busTimeout bounds one announcement on the store's bus.
const busTimeout = 2 * time.Second

// Replicas sharing a store that is also a state.Bus (Redis pub/sub) tell each other of a
// change to the revocation list at once: the replica that changed it publishes the new
// index stamp on the list's channel, and every follower syncs when a message (or the nil
// message of a reconnection) arrives, instead of at its next refresh. The bus is only a
// hint: a lost message delays a change by at most one refresh, as without a bus.

// announce tells the other replicas that the list changed; a failure only costs them the
// wait for their refresh, so it is logged at debug level.
func (r *Revocations) announce(ctx context.Context, stamp string) {
	bus, ok := r.kv.(state.Bus)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), busTimeout)
	defer cancel()
	if err := bus.Publish(ctx, r.channel, []byte(stamp)); err != nil {
		r.log.Debug("announcing a revocation list change failed; other replicas see it at their refresh", "err", err)
	}
}

// changeNotes is the follower's subscription to the list's channel, when the store has a
// bus; its zero value is "not subscribed".
type changeNotes struct {
	sub state.Subscription
}

// open subscribes, unless already subscribed or the store has no bus; a failure leaves it
// unsubscribed until the next try.
func (n *changeNotes) open(r *Revocations) {
	bus, ok := r.kv.(state.Bus)
	if !ok || n.sub != nil {
		return
	}
	sub, err := bus.Subscribe(r.ctx, r.channel)
	if err != nil {
		r.log.Debug("subscribing to revocation list changes failed; following by refresh only", "err", err)
		return
	}
	n.sub = sub
}

// c is the channel of change messages; nil (never ready) when not subscribed.
func (n *changeNotes) c() <-chan []byte {
	if n.sub == nil {
		return nil
	}
	return n.sub.C()
}

// close ends the subscription, if any.
func (n *changeNotes) close() {
	if n.sub != nil {
		_ = n.sub.Close()
		n.sub = nil
	}
}
