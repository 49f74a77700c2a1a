package resilience

import (
	"bytes"
	"context"
	"strconv"
	"time"

	"github.com/gatehouse-dev/gatehouse/state"
)

// Bucket is the shape of a token bucket: it holds at most Burst tokens and gains one every
// Interval; a call takes one. Interval > 0, Burst > 0, and Interval × Burst fits an int64
// of nanoseconds (compile checks it for configured rules).
type Bucket struct {
	Interval time.Duration
	Burst    int64
}

// Draw is the outcome of taking a token from a bucket.
type Draw struct {
	// Allowed is true when a token was taken.
	Allowed bool
	// Remaining is how many whole tokens the bucket holds after the draw.
	Remaining int64
	// Reset is how long until the bucket holds one more whole token than Remaining.
	Reset time.Duration
	// RetryAfter is, when the draw was refused, how long until a call could take a token;
	// 0 when allowed.
	RetryAfter time.Duration
}

// Buckets holds the state of token buckets, one per key. It is the rate-limit stage's
// per-kind state interface (DESIGN.md "State"): KVBuckets implements it over any state.KV,
// so the embedded store and a shared Redis one both work, in one round trip when the KV is
// a state.CellRater.
type Buckets interface {
	// Take draws one token at now from the bucket under key, of shape b. On return the
	// Draw is meaningful iff err is nil. A bucket idle long enough to be full again holds
	// no state: its entry has expired.
	Take(ctx context.Context, key string, b Bucket, now time.Time) (Draw, error)
}

// bucketCASAttempts bounds the read-compare-and-swap rounds of one draw. A caller whose
// concurrent calls lose them all is refused as over its rate, which it is.
const bucketCASAttempts = 16

// KVBuckets keeps token buckets in a state.KV with the generic cell rate algorithm (GCRA):
// the whole state of a bucket is one instant, its theoretical arrival time (TAT) — when it
// would be full again — stored as decimal Unix nanoseconds, so replicas sharing the store
// share the buckets. The entry's time to live is the time until the bucket is full: an
// idle bucket costs no memory.
//
// A KV that implements state.CellRater (both backends) makes each draw one atomic
// operation (one Lua script on Redis); any other KV is updated by a read then a
// compare-and-swap, retried under contention. Both give the same Draws.
type KVBuckets struct {
	kv state.KV
}

var _ Buckets = (*KVBuckets)(nil)

// NewKVBuckets returns buckets kept in kv.
func NewKVBuckets(kv state.KV) *KVBuckets { return &KVBuckets{kv: kv} }

// Take implements Buckets. With T the interval and τ = T × Burst, a call at now is allowed
// iff max(TAT, now) + T − now ≤ τ; it then stores TAT = max(TAT, now) + T.
func (k *KVBuckets) Take(ctx context.Context, key string, b Bucket, now time.Time) (Draw, error) {
	if cr, ok := k.kv.(state.CellRater); ok {
		return takeCell(ctx, cr, key, b, now)
	}
	return k.takeCAS(ctx, key, b, now)
}

// takeCell draws in one call of cr.
func takeCell(ctx context.Context, cr state.CellRater, key string, b Bucket, now time.Time) (Draw, error) {
	ok, tat, err := cr.TakeCell(ctx, key, now, b.Interval, b.Burst)
	if err != nil {
		return Draw{}, err
	}
	n, t := now.UnixNano(), int64(b.Interval)
	tau := t * b.Burst
	if !ok {
		return refused(tat, n, t, tau), nil
	}
	return allowed(tat-n, t, tau), nil
}

// takeCAS draws with Get then CompareAndSwap (SetNX for a new bucket), retried under
// contention.
func (k *KVBuckets) takeCAS(ctx context.Context, key string, b Bucket, now time.Time) (Draw, error) {
	n, t := now.UnixNano(), int64(b.Interval)
	tau := t * b.Burst
	var buf [20]byte
	for range bucketCASAttempts {
		old, ok, err := k.kv.Get(ctx, key)
		if err != nil {
			return Draw{}, err
		}
		tat := n
		if v, valid := decodeTAT(old); ok && valid && v > n {
			tat = v
		}
		if tat+t-n > tau {
			return refused(tat, n, t, tau), nil
		}
		next := tat + t
		val := strconv.AppendInt(buf[:0], next, 10)
		var swapped bool
		if ok {
			swapped, err = k.kv.CompareAndSwap(ctx, key, old, val, time.Duration(next-n))
		} else {
			swapped, err = k.kv.SetNX(ctx, key, val, time.Duration(next-n))
		}
		if err != nil {
			return Draw{}, err
		}
		if swapped {
			return allowed(next-n, t, tau), nil
		}
	}
	return Draw{Reset: b.Interval, RetryAfter: b.Interval}, nil
}

// refused is the Draw of a call refused at n by a bucket whose TAT is tat.
func refused(tat, n, t, tau int64) Draw {
	wait := time.Duration(tat + t - n - tau)
	return Draw{Reset: wait, RetryAfter: wait}
}

// allowed is the Draw of an allowed call that left the bucket owing debt (TAT − now).
func allowed(debt, t, tau int64) Draw {
	remaining := (tau - debt) / t
	return Draw{Allowed: true, Remaining: remaining, Reset: time.Duration(debt - tau + (remaining+1)*t)}
}

// decodeTAT reads a stored TAT: the canonical decimal form of an int64 ("-7", "0"; not
// "+7", "07", "-0"), as Incr would write it. Anything else is not a TAT: the draw then
// treats the bucket as full and overwrites the value.
func decodeTAT(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, false
	}
	var buf [20]byte
	return v, bytes.Equal(strconv.AppendInt(buf[:0], v, 10), b)
}
