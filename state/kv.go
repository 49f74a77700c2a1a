package state

import (
	"context"
	"errors"
	"time"
)

// KV is a store of byte values under string keys, every entry with a time to live. It is
// the one primitive every state backend implements; each method is one atomic operation
// (one Redis command or one Lua script) and is safe for concurrent use.
//
// Rules that hold for every method:
//   - After Close, every method (Close included) returns [ErrClosed].
//   - A context that is already done makes the method return its error (context.Canceled or
//     context.DeadlineExceeded, possibly wrapped) without doing anything.
//   - A ttl must be > 0, else [ErrNoTTL] and nothing is written. The entry expires ttl after
//     the write; backends of millisecond resolution (Redis PX) round ttl up to a whole
//     millisecond. An expired entry is never returned and counts as absent everywhere.
//   - A key longer than the backend's key limit, or a value (CompareAndSwap's oldValue
//     included) longer than its value limit, is refused with [ErrTooLarge]; see [Limited] and
//     [DefaultMaxKeyBytes], [DefaultMaxValueBytes]. The empty key is a valid key.
//   - Values are copied in and out: the caller may reuse a buffer it passed as soon as the
//     call returns, and may modify a returned value freely.
//   - A nil value and an empty one are stored alike, as the empty value, except where
//     CompareAndSwap gives nil the meaning "absent".
//
// When a method of the embedded backend returns an error, nothing changed. A Redis backend
// whose connection fails mid-call cannot know whether the command ran. Every command and
// script below touches one key, so the Redis backend also works on Redis Cluster.
type KV interface {
	// Get returns the value under key. ok is true iff the key holds a live entry; then value
	// is a fresh copy, non-nil even when empty. On a miss or an error, value is nil.
	// Redis: GET key.
	Get(ctx context.Context, key string) (value []byte, ok bool, err error)

	// Set stores value under key, replacing any value and its TTL; the entry expires ttl
	// from now. Redis: SET key value PX ttl.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error

	// SetNX stores value under key with ttl only if the key holds no live entry, and reports
	// whether it did. Of concurrent SetNX calls on an absent key exactly one returns true:
	// this is the in-flight lock. A live entry, and its TTL, are left untouched.
	// Redis: SET key value NX PX ttl.
	SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error)

	// CompareAndSwap stores newValue under key, with a fresh ttl, only if the current value
	// equals oldValue, and reports whether it did. nil means "absent" on both sides:
	// oldValue == nil requires that the key hold no live entry (an empty non-nil oldValue
	// requires a live empty value); newValue == nil deletes the entry (compare-and-delete,
	// how an owner releases its lock). When it returns false nothing changed.
	// Redis: a Lua script (GET, compare, then SET key newValue PX ttl, or DEL key).
	CompareAndSwap(ctx context.Context, key string, oldValue, newValue []byte, ttl time.Duration) (bool, error)

	// Delete removes the entry under key and reports whether a live entry was there.
	// Redis: DEL key.
	Delete(ctx context.Context, key string) (bool, error)

	// Incr adds delta to the integer under key and returns the sum. Integers are stored as
	// their decimal text, as Redis stores them: Get returns e.g. "42", and a value written
	// by Set is an integer if it is the canonical decimal form of an int64 ("-7", "0"; not
	// "+7", "07", "-0", " 7" or "").
	//
	// The TTL is set only when Incr creates the key: if the key holds no live entry, Incr
	// stores delta with ttl; if it holds one, the sum replaces the value and the entry keeps
	// the expiry it had (whoever wrote it), so a counter expires ttl after its first
	// increment however often it is incremented: a fixed window. ttl must still be > 0.
	//
	// A live value that is not an integer, or a sum that would overflow int64, gives
	// [ErrNotInteger] and leaves the entry as it was.
	// Redis: a Lua script (INCRBY key delta, then PEXPIRE key ttl only if PTTL key is -1, as
	// PEXPIRE NX does from Redis 7 on; the sum is read back as text).
	Incr(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error)

	// Close releases the store: the embedded backend stops its janitor and drops every
	// entry; a Redis backend closes its connections (the data stays in Redis). Calls in
	// flight finish or return ErrClosed. Close returns ErrClosed when already closed.
	Close() error
}

// Errors every backend returns; compare with errors.Is, since they may be wrapped with
// detail.
var (
	// ErrClosed is returned by every method of a KV after Close.
	ErrClosed = errors.New("state: store closed")
	// ErrNoTTL is returned for a ttl <= 0: nothing lives forever.
	ErrNoTTL = errors.New("state: ttl must be positive")
	// ErrTooLarge is returned for a key or value over the backend's limit.
	ErrTooLarge = errors.New("state: key or value too large")
	// ErrFull is returned when the store holds its maximum number of live entries and a
	// write would add one. Nothing is evicted to make room.
	ErrFull = errors.New("state: store full")
	// ErrNotInteger is returned by Incr when the value is not a decimal int64 or the sum
	// would overflow.
	ErrNotInteger = errors.New("state: value is not an integer or out of range")
)

// Default limits, shared by every backend unless configured otherwise.
const (
	DefaultMaxKeyBytes   = 1 << 10
	DefaultMaxValueBytes = 1 << 20
)

// Limits are the largest key and value, in bytes, a store accepts.
type Limits struct {
	MaxKeyBytes   int
	MaxValueBytes int
}

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{MaxKeyBytes: DefaultMaxKeyBytes, MaxValueBytes: DefaultMaxValueBytes}
}

// Limited is implemented by a KV that reports its limits. Callers may check a value
// against them before encoding it; the contract suite tests the reported limits exactly,
// and the defaults for a KV that does not implement Limited.
type Limited interface {
	Limits() Limits
}
