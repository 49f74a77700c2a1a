package state_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/redistest"
	"github.com/gatehouse-dev/gatehouse/state"
)

// BenchmarkKV compares the backends on the calls features make most, in one run: Get of a
// present key, an in-flight lock's SetNX, a CompareAndSwap, and a rate-limit decision.
// Redis runs on loopback, so its rows are round-trip bound; they are skipped without
// redis-server.
func BenchmarkKV(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) kvAll
	}{
		{"embedded", func(*testing.B) kvAll { return state.NewEmbedded(state.EmbeddedOptions{}) }},
		{"redis", func(b *testing.B) kvAll {
			srv := redistest.Start(b) // per row, so that the embedded rows run without Redis
			r, err := state.NewRedis(state.RedisConfig{Addrs: []string{srv.Addr}, KeyPrefix: srv.Prefix(b)})
			if err != nil {
				b.Fatal(err)
			}
			return r
		}},
	}
	ops := []struct {
		name string
		op   func(ctx context.Context, kv kvAll, key string) error
	}{
		{"Get", func(ctx context.Context, kv kvAll, key string) error {
			_, _, err := kv.Get(ctx, key)
			return err
		}},
		{"SetNX", func(ctx context.Context, kv kvAll, key string) error {
			_, err := kv.SetNX(ctx, key+":lock", []byte("owner"), time.Minute)
			return err
		}},
		{"CompareAndSwap", func(ctx context.Context, kv kvAll, key string) error {
			_, err := kv.CompareAndSwap(ctx, key, []byte("value"), []byte("value"), time.Hour)
			return err
		}},
		{"TakeCell", func(ctx context.Context, kv kvAll, key string) error {
			_, _, err := kv.TakeCell(ctx, key+":rl", time.Now(), time.Microsecond, 1000)
			return err
		}},
	}
	for _, be := range backends {
		for _, o := range ops {
			b.Run(be.name+"/"+o.name, func(b *testing.B) {
				ctx := context.Background()
				kv := be.open(b)
				defer kv.Close()
				keys := make([]string, benchKeys)
				for i := range keys {
					keys[i] = "bench:kv:" + strconv.Itoa(i)
					if err := kv.Set(ctx, keys[i], []byte("value"), time.Hour); err != nil {
						b.Fatal(err)
					}
				}
				parallel(b, keys, func(k string) error { return o.op(ctx, kv, k) })
			})
		}
	}
}

// kvAll is what both backends implement.
type kvAll interface {
	state.KV
	state.CellRater
}
