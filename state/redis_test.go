package state_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/internal/redistest"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
	"github.com/gatehouse-dev/gatehouse/state/statetest"
)

// newRedis returns a Redis KV on srv under a key prefix of the test's own, closed at the
// end of the test.
func newRedis(t *testing.T, srv *redistest.Server, cfg state.RedisConfig) *state.Redis {
	t.Helper()
	cfg.Addrs = []string{srv.Addr}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = srv.Prefix(t)
	}
	r, err := state.NewRedis(cfg)
	if err != nil {
		t.Fatalf("NewRedis: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// rawClient returns a plain go-redis client on srv, to look at what the backend wrote.
func rawClient(t *testing.T, srv *redistest.Server) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestRedisContract(t *testing.T) {
	srv := redistest.Start(t)
	t.Run("Defaults", func(t *testing.T) {
		statetest.RunKV(t, func(t *testing.T) state.KV { return newRedis(t, srv, state.RedisConfig{}) })
	})
	t.Run("SmallLimits", func(t *testing.T) {
		statetest.RunKV(t, func(t *testing.T) state.KV {
			return newRedis(t, srv, state.RedisConfig{MaxKeyBytes: 40, MaxValueBytes: 100})
		})
	})
}

func TestRedisKeyPrefix(t *testing.T) {
	srv := redistest.Start(t)
	raw := rawClient(t, srv)
	ctx := t.Context()
	const prefix = "deployment-a:"
	a := newRedis(t, srv, state.RedisConfig{KeyPrefix: prefix})
	b := newRedis(t, srv, state.RedisConfig{KeyPrefix: "deployment-b:"})
	if got := a.Prefix(); got != prefix {
		t.Errorf("Prefix() = %q, want %q", got, prefix)
	}
	if err := a.Set(ctx, "set", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetNX(ctx, "setnx", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CompareAndSwap(ctx, "cas", nil, []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Incr(ctx, "incr", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	keys, err := raw.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{prefix + "set": true, prefix + "setnx": true, prefix + "cas": true, prefix + "incr": true}
	for _, k := range keys {
		if !want[k] {
			t.Errorf("unexpected key %q in Redis", k)
		}
		delete(want, k)
	}
	for k := range want {
		t.Errorf("key %q missing from Redis (got %q)", k, keys)
	}
	if _, ok, err := b.Get(ctx, "set"); err != nil || ok {
		t.Errorf("Get under another prefix = %v, %v; want absent", ok, err)
	}
	if ok, err := a.Delete(ctx, "set"); err != nil || !ok {
		t.Errorf("Delete = %v, %v; want true", ok, err)
	}
	if n, _ := raw.Exists(ctx, prefix+"set").Result(); n != 0 {
		t.Errorf("the prefixed key survived Delete")
	}
}

func TestRedisDefaultKeyPrefix(t *testing.T) {
	srv := redistest.Start(t)
	r, err := state.NewRedis(state.RedisConfig{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Prefix(); got != "gatehouse:" {
		t.Errorf("default Prefix() = %q, want %q", got, "gatehouse:")
	}
	if err := r.Set(t.Context(), "k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, err := rawClient(t, srv).Get(t.Context(), "gatehouse:k").Result(); err != nil || v != "v" {
		t.Errorf("raw GET gatehouse:k = %q, %v; want v", v, err)
	}
}

// TestRedisPXRounding checks that a ttl is sent as PX rounded up to a whole millisecond:
// PTTL read in the same millisecond as the write equals PX, never more.
func TestRedisPXRounding(t *testing.T) {
	srv := redistest.Start(t)
	r := newRedis(t, srv, state.RedisConfig{})
	raw := rawClient(t, srv)
	ctx := t.Context()
	tests := []struct {
		ttl  time.Duration
		want int64 // ms
	}{
		{time.Hour, 3_600_000},
		{time.Hour + time.Nanosecond, 3_600_001},
		{time.Hour + 999_999*time.Nanosecond, 3_600_001},
		{time.Hour + time.Millisecond, 3_600_001},
	}
	for _, tt := range tests {
		write := map[string]func(key string) error{
			"Set": func(k string) error { return r.Set(ctx, k, []byte("v"), tt.ttl) },
			"SetNX": func(k string) error {
				_, err := r.SetNX(ctx, k, []byte("v"), tt.ttl)
				return err
			},
			"CompareAndSwap": func(k string) error {
				_, err := r.CompareAndSwap(ctx, k, nil, []byte("v"), tt.ttl)
				return err
			},
			"Incr": func(k string) error {
				_, err := r.Incr(ctx, k, 1, tt.ttl)
				return err
			},
		}
		for name, w := range write {
			seen := false
			for attempt := range 50 {
				k := name + ":" + tt.ttl.String() + ":" + time.Now().Format(time.RFC3339Nano) + string(rune('a'+attempt%26))
				if err := w(k); err != nil {
					t.Fatalf("%s ttl %v: %v", name, tt.ttl, err)
				}
				pttl, err := raw.PTTL(ctx, r.Prefix()+k).Result()
				if err != nil {
					t.Fatal(err)
				}
				if ms := pttl.Milliseconds(); ms > tt.want || ms < tt.want-1000 {
					t.Fatalf("%s ttl %v: PTTL %d ms, want at most %d (and near it)", name, tt.ttl, ms, tt.want)
				} else if ms == tt.want {
					seen = true
					break
				}
			}
			if !seen {
				t.Errorf("%s ttl %v: PTTL never read %d ms in 50 attempts", name, tt.ttl, tt.want)
			}
		}
	}
}

// wantUnavailable checks that err is the error of an unreachable store.
func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("%s: error %v, want state.ErrUnavailable", what, err)
		return
	}
	ge := gateway.AsError(err)
	if ge.Code() != schemas.CodeUnavailable || ge.Message() != "state store unavailable" {
		t.Errorf("%s: AsError = %d %q, want %d %q", what, ge.Code(), ge.Message(), schemas.CodeUnavailable, "state store unavailable")
	}
}

// everyCall runs each KV method and Ping once on key, returning their errors by name.
func everyCall(ctx context.Context, r *state.Redis, key string) map[string]error {
	v := []byte("v")
	errs := map[string]error{}
	_, _, errs["Get"] = r.Get(ctx, key)
	errs["Set"] = r.Set(ctx, key, v, time.Minute)
	_, errs["SetNX"] = r.SetNX(ctx, key, v, time.Minute)
	_, errs["CompareAndSwap"] = r.CompareAndSwap(ctx, key, v, nil, time.Minute)
	_, errs["Delete"] = r.Delete(ctx, key)
	_, errs["Incr"] = r.Incr(ctx, key+":n", 1, time.Minute)
	_, _, errs["TakeCell"] = r.TakeCell(ctx, key+":rl", time.Now(), time.Second, 5)
	errs["Publish"] = r.Publish(ctx, key, v)
	var sub state.Subscription
	if sub, errs["Subscribe"] = r.Subscribe(ctx, key); sub != nil {
		_ = sub.Close()
	}
	errs["Ping"] = r.Ping(ctx)
	return errs
}

func TestRedisUnavailableThenRecovers(t *testing.T) {
	srv := redistest.Start(t)
	r := newRedis(t, srv, state.RedisConfig{DialTimeout: 500 * time.Millisecond, PoolSize: 4})
	ctx := t.Context()
	if err := r.Set(ctx, "k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	// Twice: the first calls find the pooled connections dead, later ones fail to dial.
	for range 2 {
		for name, err := range everyCall(ctx, r, "k") {
			wantUnavailable(t, name+" with the server killed", err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := r.Get(cancelled, "k"); !errors.Is(err, context.Canceled) || errors.Is(err, state.ErrUnavailable) {
		t.Errorf("Get with a cancelled context while down: %v, want context.Canceled alone", err)
	}

	srv.Restart(t)
	deadline := time.Now().Add(15 * time.Second) // go-redis probes a failing dialer every second
	for r.Ping(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("Ping still failing 15s after the restart: %v", r.Ping(ctx))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for name, err := range everyCall(ctx, r, "k2") {
		if err != nil {
			t.Errorf("%s after the restart: %v", name, err)
		}
	}
	if _, ok, err := r.Get(ctx, "k"); err != nil || ok {
		t.Errorf("Get of a key written before the restart = %v, %v; want absent (no persistence)", ok, err)
	}
}

// silentListener accepts connections on loopback and never answers.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

func TestRedisTimeouts(t *testing.T) {
	addr := silentListener(t)
	r, err := state.NewRedis(state.RedisConfig{Addrs: []string{addr}, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	// Without a deadline of its own, the caller meets read_timeout: the store is unavailable.
	_, _, err = r.Get(t.Context(), "k")
	wantUnavailable(t, "Get from a silent server", err)

	// A caller's deadline that comes first stays a context error.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, _, err = r.Get(ctx, "k")
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, state.ErrUnavailable) {
		t.Errorf("Get with a short deadline from a silent server: %v, want context.DeadlineExceeded alone", err)
	}
}

func TestRedisPing(t *testing.T) {
	srv := redistest.Start(t)
	r := newRedis(t, srv, state.RedisConfig{})
	if err := r.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Ping(t.Context()); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Ping after Close: %v, want ErrClosed", err)
	}
}

func TestRedisOOMIsFull(t *testing.T) {
	srv := redistest.Start(t)
	raw := rawClient(t, srv)
	ctx := t.Context()
	r := newRedis(t, srv, state.RedisConfig{})
	if err := raw.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := raw.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = raw.ConfigSet(context.Background(), "maxmemory", "0").Err() }()
	err := r.Set(ctx, "k", []byte("v"), time.Minute)
	if !errors.Is(err, state.ErrFull) {
		t.Errorf("Set over maxmemory with noeviction: %v, want ErrFull", err)
	}
}
