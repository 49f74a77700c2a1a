package server

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/redistest"
	"github.com/gatehouse-dev/gatehouse/state"
)

// replicaBenchConfig puts shared state on the path of every call: one rate-limit decision
// and, with the idempotency key each call carries, a lock and a record.
const replicaBenchConfig = `
auth: {anonymous: {}}
routing: {demo: {}}
rate_limits:
  rules: [{match: "*", rate: 1000000000/s, burst: 1000000000}]
idempotency: {ttl: 1m}
`

// BenchmarkReplicas compares three gateways sharing one real Redis (a round-robin client, as
// behind a load balancer) with one gateway on the embedded store, on the same calls: demo
// subtract with a rate limit and a fresh idempotency key per call. The replicas share this
// process and its CPUs, so the ratio is the price of Redis round trips per call on one
// machine, not the capacity gained by adding machines. redis-round-trips/call counts every
// command and script the replicas sent (each state operation is one round trip), background
// work included.
func BenchmarkReplicas(b *testing.B) {
	b.Run("embedded_1", func(b *testing.B) {
		url := benchGatewayConfig(b, replicaBenchConfig)
		benchIdempotentCalls(b, []string{url})
	})
	b.Run("redis_3", func(b *testing.B) {
		srv := redistest.Start(b)
		prefix := srv.Prefix(b)
		var trips atomic.Int64
		urls := make([]string, 3)
		for i := range urls {
			kv, err := state.NewRedis(state.RedisConfig{Addrs: []string{srv.Addr}, KeyPrefix: prefix})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = kv.Close() })
			cfg, err := Parse("bench.yaml", []byte(`
server: {boundary: {addr: "127.0.0.1:0"}, admin: {addr: "127.0.0.1:0"}}
log: {level: error}
`+replicaBenchConfig))
			if err != nil {
				b.Fatal(err)
			}
			urls[i] = benchServe(b, cfg, Options{Logger: slog.New(slog.DiscardHandler), State: &countingRedis{Redis: kv, n: &trips}})
		}
		trips.Store(0)
		benchIdempotentCalls(b, urls)
		b.StopTimer()
		b.ReportMetric(float64(trips.Load())/float64(b.N), "redis-round-trips/call")
	})
}

// countingRedis counts the round trips of a Redis state backend: one per operation.
type countingRedis struct {
	*state.Redis
	n *atomic.Int64
}

func (c *countingRedis) Get(ctx context.Context, key string) ([]byte, bool, error) {
	c.n.Add(1)
	return c.Redis.Get(ctx, key)
}

func (c *countingRedis) Set(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	c.n.Add(1)
	return c.Redis.Set(ctx, key, v, ttl)
}

func (c *countingRedis) SetNX(ctx context.Context, key string, v []byte, ttl time.Duration) (bool, error) {
	c.n.Add(1)
	return c.Redis.SetNX(ctx, key, v, ttl)
}

func (c *countingRedis) CompareAndSwap(ctx context.Context, key string, old, v []byte, ttl time.Duration) (bool, error) {
	c.n.Add(1)
	return c.Redis.CompareAndSwap(ctx, key, old, v, ttl)
}

func (c *countingRedis) Delete(ctx context.Context, key string) (bool, error) {
	c.n.Add(1)
	return c.Redis.Delete(ctx, key)
}

func (c *countingRedis) Incr(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error) {
	c.n.Add(1)
	return c.Redis.Incr(ctx, key, delta, ttl)
}

func (c *countingRedis) TakeCell(ctx context.Context, key string, now time.Time, interval time.Duration, burst int64) (bool, int64, error) {
	c.n.Add(1)
	return c.Redis.TakeCell(ctx, key, now, interval, burst)
}

func (c *countingRedis) Publish(ctx context.Context, channel string, msg []byte) error {
	c.n.Add(1)
	return c.Redis.Publish(ctx, channel, msg)
}

// benchIdempotentCalls measures subtract calls, each with a fresh idempotency key, spread
// round-robin over urls.
func benchIdempotentCalls(b *testing.B, urls []string) {
	b.Helper()
	client := benchClient()
	var seq atomic.Int64
	prefix := strconv.FormatInt(int64(b.N), 36) + "-" + strconv.FormatInt(benchRun.Add(1), 36)
	b.ReportAllocs()
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			body := `{"jsonrpc":"2.0","method":"subtract","params":{"minuend":42,"subtrahend":23,"idempotency_key":"` +
				prefix + "-" + strconv.FormatInt(n, 36) + `"},"id":1}`
			if err := post(client, urls[int(n)%len(urls)], body, `"result":19`); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchRun keeps the idempotency keys of successive benchmark runs apart.
var benchRun atomic.Int64
