package state

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Defaults of the embedded store.
const (
	DefaultMaxEntries    = 1_000_000
	DefaultSweepInterval = time.Second
)

const (
	// numShards is how many independently locked parts the embedded store has; a power of 2.
	numShards = 32
	// sweepBatch bounds how many expired entries one lock hold removes, so a mass expiry
	// does not stall writers behind the janitor.
	sweepBatch = 1024
)

// errNoRoom tells Embedded.locked that an operation needs a new entry and the store is full.
var errNoRoom = errors.New("state: no room")

// errOverflow is ErrNotInteger for a sum out of the int64 range.
var errOverflow = fmt.Errorf("%w: increment would overflow", ErrNotInteger)

// EmbeddedOptions configure an [Embedded] store. A zero or negative field takes its default.
type EmbeddedOptions struct {
	// MaxEntries bounds how many entries the store holds (default [DefaultMaxEntries]).
	MaxEntries int
	// MaxKeyBytes bounds a key's length (default [DefaultMaxKeyBytes]).
	MaxKeyBytes int
	// MaxValueBytes bounds a value's length (default [DefaultMaxValueBytes]).
	MaxValueBytes int
	// SweepInterval is how often the janitor removes expired entries (default
	// [DefaultSweepInterval]).
	SweepInterval time.Duration
	// BusBuffer is how many undelivered messages each [Bus] subscription holds before it
	// drops the oldest (default [DefaultBusBuffer]).
	BusBuffer int
	// Now is the clock (default time.Now). Tests inject one to move time without sleeping;
	// the janitor's ticker still runs on real time.
	Now func() time.Time
}

func (o EmbeddedOptions) withDefaults() EmbeddedOptions {
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxKeyBytes <= 0 {
		o.MaxKeyBytes = DefaultMaxKeyBytes
	}
	if o.MaxValueBytes <= 0 {
		o.MaxValueBytes = DefaultMaxValueBytes
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = DefaultSweepInterval
	}
	if o.BusBuffer <= 0 {
		o.BusBuffer = DefaultBusBuffer
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Embedded is the in-process [KV], the default backend. It is split into 32 shards, each a
// mutex, a map and a min-heap on expiry, so unrelated keys rarely contend.
//
// Memory is bounded by MaxEntries. When the store is full, a write that would add an entry
// first reclaims expired ones; if none can be reclaimed it fails with [ErrFull]. It never
// evicts a live entry to make room: for idempotency records and in-flight locks, silently
// forgetting one would let a request run twice, a correctness bug rather than a cache
// miss. Writes to existing entries, reads and deletes still succeed when full.
//
// Expired entries are never returned: every read checks the expiry. They are removed when
// an operation comes across them, and in the background by a janitor goroutine every
// SweepInterval, which Close stops.
type Embedded struct {
	shards     [numShards]shard
	count      atomic.Int64 // entries in all shards, live or not yet swept
	closed     atomic.Bool
	maxEntries int64
	limits     Limits
	seed       maphash.Seed
	now        func() time.Time
	base       time.Time // the clock's reading at creation; see tick
	stop       chan struct{}
	done       chan struct{}
	bus        *hub
}

var (
	_ KV        = (*Embedded)(nil)
	_ Limited   = (*Embedded)(nil)
	_ Bus       = (*Embedded)(nil)
	_ CellRater = (*Embedded)(nil)
)

// NewEmbedded returns an empty store and starts its janitor. Close it to stop the janitor.
func NewEmbedded(opts EmbeddedOptions) *Embedded {
	opts = opts.withDefaults()
	e := &Embedded{
		maxEntries: int64(opts.MaxEntries),
		limits:     Limits{MaxKeyBytes: opts.MaxKeyBytes, MaxValueBytes: opts.MaxValueBytes},
		seed:       maphash.MakeSeed(),
		now:        opts.Now,
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		bus:        newHub(opts.BusBuffer),
	}
	e.base = e.now()
	for i := range e.shards {
		e.shards[i].entries = make(map[string]*entry)
		e.shards[i].count = &e.count
	}
	go e.janitor(opts.SweepInterval)
	return e
}

// Get implements [KV.Get].
func (e *Embedded) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if err := e.check(ctx, key); err != nil {
		return nil, false, err
	}
	var value []byte
	found := false
	err := e.locked(key, func(s *shard, now int64) error {
		if en := s.live(key, now); en != nil {
			value, found = clone(en.value), true
		}
		return nil
	})
	return value, found, err
}

// Set implements [KV.Set].
func (e *Embedded) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := e.checkWrite(ctx, key, value, ttl); err != nil {
		return err
	}
	return e.locked(key, func(s *shard, now int64) error {
		if en := s.live(key, now); en != nil {
			en.value = overwrite(en.value, value)
			s.setExpiry(en, deadline(now, ttl))
			return nil
		}
		return e.insert(s, key, value, now, deadline(now, ttl))
	})
}

// SetNX implements [KV.SetNX].
func (e *Embedded) SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	if err := e.checkWrite(ctx, key, value, ttl); err != nil {
		return false, err
	}
	stored := false
	err := e.locked(key, func(s *shard, now int64) error {
		if s.live(key, now) != nil {
			return nil
		}
		if err := e.insert(s, key, value, now, deadline(now, ttl)); err != nil {
			return err
		}
		stored = true
		return nil
	})
	return stored, err
}

// CompareAndSwap implements [KV.CompareAndSwap].
func (e *Embedded) CompareAndSwap(ctx context.Context, key string, oldValue, newValue []byte, ttl time.Duration) (bool, error) {
	if err := e.checkWrite(ctx, key, newValue, ttl); err != nil {
		return false, err
	}
	if err := e.checkValue(oldValue); err != nil {
		return false, err
	}
	swapped := false
	err := e.locked(key, func(s *shard, now int64) error {
		en := s.live(key, now)
		if !matches(en, oldValue) {
			return nil
		}
		switch {
		case newValue == nil && en != nil:
			s.remove(en)
		case newValue == nil:
		case en != nil:
			en.value = overwrite(en.value, newValue)
			s.setExpiry(en, deadline(now, ttl))
		default:
			if err := e.insert(s, key, newValue, now, deadline(now, ttl)); err != nil {
				return err
			}
		}
		swapped = true
		return nil
	})
	return swapped, err
}

// matches reports whether the entry en (nil when absent) is what old describes.
func matches(en *entry, old []byte) bool {
	if old == nil || en == nil {
		return old == nil && en == nil
	}
	return string(en.value) == string(old)
}

// Delete implements [KV.Delete].
func (e *Embedded) Delete(ctx context.Context, key string) (bool, error) {
	if err := e.check(ctx, key); err != nil {
		return false, err
	}
	deleted := false
	err := e.locked(key, func(s *shard, now int64) error {
		if en := s.live(key, now); en != nil {
			s.remove(en)
			deleted = true
		}
		return nil
	})
	return deleted, err
}

// Incr implements [KV.Incr].
func (e *Embedded) Incr(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error) {
	if err := e.checkWrite(ctx, key, nil, ttl); err != nil {
		return 0, err
	}
	var sum int64
	err := e.locked(key, func(s *shard, now int64) error {
		en := s.live(key, now)
		if en == nil {
			var buf [20]byte // the longest int64: "-9223372036854775808"
			if err := e.insert(s, key, strconv.AppendInt(buf[:0], delta, 10), now, deadline(now, ttl)); err != nil {
				return err
			}
			sum = delta
			return nil
		}
		cur, ok := parseInt(en.value)
		if !ok {
			return ErrNotInteger
		}
		if sum, ok = addInt(cur, delta); !ok {
			return errOverflow
		}
		en.value = strconv.AppendInt(en.value[:0], sum, 10)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return sum, nil
}

// Close implements [KV.Close]: it stops the janitor, waits for it to return, ends every
// [Bus] subscription and drops every entry.
func (e *Embedded) Close() error {
	if !e.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	close(e.stop)
	<-e.done
	e.bus.close()
	for i := range e.shards {
		e.shards[i].drop()
	}
	e.count.Store(0)
	return nil
}

// Len returns how many entries the store holds, live or expired and not yet swept: what
// counts against MaxEntries. It is 0 after Close.
func (e *Embedded) Len() int { return int(e.count.Load()) }

// Limits implements [Limited].
func (e *Embedded) Limits() Limits { return e.limits }

// check applies the rules every method shares.
func (e *Embedded) check(ctx context.Context, key string) error {
	if e.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(key) > e.limits.MaxKeyBytes {
		return fmt.Errorf("%w: key of %d bytes, the limit is %d", ErrTooLarge, len(key), e.limits.MaxKeyBytes)
	}
	return nil
}

// checkWrite adds the rules of methods that write value with ttl.
func (e *Embedded) checkWrite(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := e.check(ctx, key); err != nil {
		return err
	}
	if ttl <= 0 {
		return fmt.Errorf("%w: got %v", ErrNoTTL, ttl)
	}
	return e.checkValue(value)
}

func (e *Embedded) checkValue(value []byte) error {
	if len(value) > e.limits.MaxValueBytes {
		return fmt.Errorf("%w: value of %d bytes, the limit is %d", ErrTooLarge, len(value), e.limits.MaxValueBytes)
	}
	return nil
}

// locked runs op under the lock of key's shard, with the time now. When op reports
// errNoRoom (it needs a new entry and the store is full, and op changed nothing), expired
// entries are reclaimed from every shard and op runs once more; if there is still no room
// the result is ErrFull.
func (e *Embedded) locked(key string, op func(s *shard, now int64) error) error {
	s := &e.shards[maphash.String(e.seed, key)&(numShards-1)]
	err := e.run(s, op)
	if !errors.Is(err, errNoRoom) {
		return err
	}
	e.sweep()
	if err = e.run(s, op); errors.Is(err, errNoRoom) {
		return fmt.Errorf("%w: %d entries", ErrFull, e.maxEntries)
	}
	return err
}

func (e *Embedded) run(s *shard, op func(s *shard, now int64) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed() {
		return ErrClosed
	}
	return op(s, e.tick())
}

// insert adds a copy of value under key, which has no entry in s, if the store has room;
// else it first sweeps s, then returns errNoRoom. Callers hold s.mu.
func (e *Embedded) insert(s *shard, key string, value []byte, now, expires int64) error {
	if !e.reserve() {
		if s.sweep(now, sweepBatch) == 0 || !e.reserve() {
			return errNoRoom
		}
	}
	// The key is cloned so that a caller's key built over a reused or larger buffer is
	// neither changed under the map nor kept alive by it.
	s.add(&entry{key: strings.Clone(key), value: clone(value), expires: expires})
	return nil
}

// reserve counts one more entry if that stays within MaxEntries. It never overshoots, so
// a concurrent writer never sees a store fuller than it is.
func (e *Embedded) reserve() bool {
	for {
		n := e.count.Load()
		if n >= e.maxEntries {
			return false
		}
		if e.count.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// sweep removes every expired entry and returns how many it removed.
func (e *Embedded) sweep() int {
	removed := 0
	for i := range e.shards {
		s := &e.shards[i]
		for {
			s.mu.Lock()
			if s.closed() {
				s.mu.Unlock()
				return removed
			}
			n := s.sweep(e.tick(), sweepBatch)
			s.mu.Unlock()
			removed += n
			if n < sweepBatch {
				break
			}
		}
	}
	return removed
}

// janitor sweeps every interval until Close.
func (e *Embedded) janitor(interval time.Duration) {
	defer close(e.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			e.sweep()
		}
	}
}

// tick returns the time now in nanoseconds since the store was created. Sub uses the
// monotonic clock when both readings carry one, so expiry is immune to wall-clock jumps.
func (e *Embedded) tick() int64 { return int64(e.now().Sub(e.base)) }

// deadline returns now + ttl, saturating instead of overflowing.
func deadline(now int64, ttl time.Duration) int64 {
	if d := now + int64(ttl); d >= now {
		return d
	}
	return math.MaxInt64
}

// clone returns a copy of b, non-nil even when b is nil.
func clone(b []byte) []byte {
	c := make([]byte, len(b))
	copy(c, b)
	return c
}

// overwrite returns src copied into dst's memory when it fits without wasting much of it,
// else a fresh copy; never nil. Stored values are never handed out, so reuse is safe.
func overwrite(dst, src []byte) []byte {
	if dst == nil || cap(dst) < len(src) || cap(dst) > 2*len(src)+64 {
		return clone(src)
	}
	dst = dst[:len(src)]
	copy(dst, src)
	return dst
}
