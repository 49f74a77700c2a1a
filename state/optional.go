package state

import (
	"context"
	"errors"
	"time"
)

// ErrUnavailable wraps every error of a backend that could not reach its store (a Redis
// connection refused, reset or timed out). Whether the command ran is unknown. Features
// decide what it means for them: idempotency and approvals fail closed, rate limits fail
// open when configured to; readiness reports it.
var ErrUnavailable = errors.New("state: store unavailable")

// Pinger is implemented by a KV whose store can be out of reach (Redis). Ping reports
// whether it answers now, wrapping [ErrUnavailable] when it does not. A KV that does not
// implement Pinger is always reachable (the embedded store).
type Pinger interface {
	Ping(ctx context.Context) error
}

// Bus is implemented by a KV that can tell every process sharing it of an event at once:
// Redis pub/sub, or the embedded store's in-process fan-out. A channel name counts against
// the key limit and a message against the value limit ([ErrTooLarge]); after Close,
// Publish and Subscribe return [ErrClosed] and every subscription ends. Messages are hints, delivered
// at most once to the subscribers connected when they are published: a feature that needs
// every change reads the store (a subscriber that reconnects reads it again).
type Bus interface {
	// Publish sends msg to every current subscriber of channel, in every process.
	Publish(ctx context.Context, channel string, msg []byte) error
	// Subscribe starts delivering the messages published on channel from now on. The
	// subscription ends when ctx is done or Close is called; then C is closed.
	Subscribe(ctx context.Context, channel string) (Subscription, error)
}

// Subscription is one Subscribe's stream of messages.
type Subscription interface {
	// C delivers messages in publication order. A subscriber that falls behind its buffer
	// loses the oldest undelivered messages, never blocks the publisher. After a
	// reconnection of the backend, one nil message is delivered: something may have been
	// missed, read the store.
	C() <-chan []byte
	// Close ends the subscription and closes C. It is idempotent.
	Close() error
}

// CellRater is implemented by a KV that can make one generic cell rate algorithm (GCRA)
// decision as one atomic operation (a Lua script on Redis): with T = interval and
// τ = T × burst, a call at now is allowed iff max(TAT, now) + T − now ≤ τ, and then the key
// holds TAT' = max(TAT, now) + T (decimal Unix nanoseconds, as KVBuckets writes it) with a
// time to live of TAT' − now. A missing or malformed value (not the canonical decimal
// form of an int64) counts as TAT = now, and so does a TAT before now.
//
// now is the caller's clock, not the store's: replicas sharing buckets need clocks kept in
// step (NTP); a replica ahead by d sees every bucket up to d fuller than it is. The rules
// of [KV] on closed stores, done contexts and key limits hold; an interval or burst that is
// not positive, or whose product overflows, gives [ErrInvalidCell].
type CellRater interface {
	// TakeCell returns whether the call is allowed and the bucket's TAT after the
	// decision, in Unix nanoseconds: TAT' when allowed; when refused, the TAT the decision
	// used, max(TAT, now), and the store is unchanged.
	TakeCell(ctx context.Context, key string, now time.Time, interval time.Duration, burst int64) (allowed bool, tat int64, err error)
}
