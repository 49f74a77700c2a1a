package state

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the [KV] kept in Redis, shared by every replica configured with the same server
// and key prefix. Each method is one command or one Lua script on one key (see [KV]), so it
// also works on Redis Cluster; the connection is go-redis' universal client, so one server,
// Sentinel and Cluster all work.
//
// Limits are checked before anything is sent. A call that cannot reach Redis (connection
// refused, reset or timed out, pool exhausted, server loading, cluster down) returns an
// error wrapping [ErrUnavailable] that converts to a -32020 UNAVAILABLE [gateway.Error];
// the backend reconnects by itself on later calls. Commands are never resent after a
// failure: whether a failed write ran is unknown.
//
// A Redis refusing a write for lack of memory (maxmemory with the noeviction policy)
// gives [ErrFull].
//
// It also implements [Pinger] (PING, for readiness), [Bus] (PUBLISH and SUBSCRIBE under the
// key prefix) and [CellRater] (one Lua script).
type Redis struct {
	client      redis.UniversalClient
	prefix      string
	limits      Limits
	readTimeout time.Duration
	busBuffer   int
	busHealth   time.Duration
	closed      atomic.Bool
	mu          sync.Mutex
	subs        map[*redisSub]struct{} // open Bus subscriptions, which Close ends
}

var (
	_ KV        = (*Redis)(nil)
	_ Limited   = (*Redis)(nil)
	_ Pinger    = (*Redis)(nil)
	_ Bus       = (*Redis)(nil)
	_ CellRater = (*Redis)(nil)
)

// NewRedis validates cfg, reads its TLS files and returns a backend on the Redis it
// names, with defaults applied to unset fields. It does not connect: an unreachable Redis
// shows in calls and in [Redis.Ping], not here. The caller closes it.
func NewRedis(cfg RedisConfig) (*Redis, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	silenceOnce.Do(func() { redis.SetLogger(silentLogger{}) })
	cfg = cfg.withDefaults()
	opts, err := cfg.options()
	if err != nil {
		return nil, err
	}
	return &Redis{
		client:      redis.NewUniversalClient(opts),
		prefix:      cfg.KeyPrefix,
		limits:      Limits{MaxKeyBytes: cfg.MaxKeyBytes, MaxValueBytes: cfg.MaxValueBytes},
		readTimeout: cfg.ReadTimeout,
		busBuffer:   cfg.BusBuffer,
		busHealth:   busHealthInterval,
		subs:        make(map[*redisSub]struct{}),
	}, nil
}

// silenceOnce silences go-redis' process-wide logger the first time a Redis backend is
// made: it prints connection failures to stderr, which this backend reports as errors
// (calls fail with ErrUnavailable, Ping tells readiness) for the gateway to log its way.
var silenceOnce sync.Once

// silentLogger discards go-redis' log lines.
type silentLogger struct{}

func (silentLogger) Printf(context.Context, string, ...any) {}

// Get implements [KV.Get] with GET.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if err := r.check(ctx, key); err != nil {
		return nil, false, err
	}
	v, err := r.client.Get(ctx, r.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, r.fail(ctx, err)
	}
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

// Set implements [KV.Set] with SET key value PX ttl.
func (r *Redis) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := r.checkWrite(ctx, key, value, ttl); err != nil {
		return err
	}
	return r.fail(ctx, r.client.Do(ctx, "set", r.prefix+key, nonNil(value), "px", pxMillis(ttl)).Err())
}

// SetNX implements [KV.SetNX] with SET key value NX PX ttl.
func (r *Redis) SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	if err := r.checkWrite(ctx, key, value, ttl); err != nil {
		return false, err
	}
	err := r.client.Do(ctx, "set", r.prefix+key, nonNil(value), "nx", "px", pxMillis(ttl)).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, r.fail(ctx, err)
	}
	return true, nil
}

// CompareAndSwap implements [KV.CompareAndSwap] with one Lua script.
func (r *Redis) CompareAndSwap(ctx context.Context, key string, oldValue, newValue []byte, ttl time.Duration) (bool, error) {
	if err := r.checkWrite(ctx, key, newValue, ttl); err != nil {
		return false, err
	}
	if err := r.checkValue(oldValue); err != nil {
		return false, err
	}
	n, err := casScript.Run(ctx, r.client, []string{r.prefix + key},
		flag(oldValue != nil), nonNil(oldValue), flag(newValue != nil), nonNil(newValue), pxMillis(ttl)).Int64()
	if err != nil {
		return false, r.fail(ctx, err)
	}
	return n == 1, nil
}

// Delete implements [KV.Delete] with DEL.
func (r *Redis) Delete(ctx context.Context, key string) (bool, error) {
	if err := r.check(ctx, key); err != nil {
		return false, err
	}
	n, err := r.client.Del(ctx, r.prefix+key).Result()
	if err != nil {
		return false, r.fail(ctx, err)
	}
	return n > 0, nil
}

// Incr implements [KV.Incr] with one Lua script.
func (r *Redis) Incr(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error) {
	if err := r.checkWrite(ctx, key, nil, ttl); err != nil {
		return 0, err
	}
	s, err := incrScript.Run(ctx, r.client, []string{r.prefix + key}, delta, pxMillis(ttl)).Text()
	if redis.HasErrorPrefix(err, notIntegerCode) {
		return 0, fmt.Errorf("%w: %s", ErrNotInteger, err.Error())
	}
	if err != nil {
		return 0, r.fail(ctx, err)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("state: redis: Incr read back %q: %w", s, err)
	}
	return n, nil
}

// Ping implements [Pinger] with PING.
func (r *Redis) Ping(ctx context.Context) error {
	if r.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return r.fail(ctx, r.client.Ping(ctx).Err())
}

// Close implements [KV.Close]: it ends every [Bus] subscription and closes the
// connections; the data stays in Redis.
func (r *Redis) Close() error {
	if !r.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	r.closeSubscriptions()
	if err := r.client.Close(); err != nil {
		return fmt.Errorf("state: redis: closing: %w", err)
	}
	return nil
}

// Limits implements [Limited].
func (r *Redis) Limits() Limits { return r.limits }

// Prefix returns the key prefix put before every key and channel name.
func (r *Redis) Prefix() string { return r.prefix }

// check applies the rules every method shares.
func (r *Redis) check(ctx context.Context, key string) error {
	if r.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(key) > r.limits.MaxKeyBytes {
		return fmt.Errorf("%w: key of %d bytes, the limit is %d", ErrTooLarge, len(key), r.limits.MaxKeyBytes)
	}
	return nil
}

// checkWrite adds the rules of methods that write value with ttl.
func (r *Redis) checkWrite(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := r.check(ctx, key); err != nil {
		return err
	}
	if ttl <= 0 {
		return fmt.Errorf("%w: got %v", ErrNoTTL, ttl)
	}
	return r.checkValue(value)
}

func (r *Redis) checkValue(value []byte) error {
	if len(value) > r.limits.MaxValueBytes {
		return fmt.Errorf("%w: value of %d bytes, the limit is %d", ErrTooLarge, len(value), r.limits.MaxValueBytes)
	}
	return nil
}

// pxMillis returns ttl in whole milliseconds, rounded up: Redis's PX resolution.
func pxMillis(ttl time.Duration) int64 {
	ms := int64(ttl / time.Millisecond)
	if ttl%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// nonNil returns b, or an empty slice for nil: go-redis would send a nil as "".
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// flag is a script's boolean argument.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
