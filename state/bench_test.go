package state_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/state"
)

const benchKeys = 1024

func benchStore(b *testing.B) (*state.Embedded, []string) {
	b.Helper()
	e := state.NewEmbedded(state.EmbeddedOptions{})
	b.Cleanup(func() { _ = e.Close() })
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = "bench:key:" + strconv.Itoa(i)
	}
	return e, keys
}

// parallel runs op from GOMAXPROCS goroutines, each walking the keys from its own offset.
func parallel(b *testing.B, keys []string, op func(key string) error) {
	b.Helper()
	var offset atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(offset.Add(97))
		for pb.Next() {
			if err := op(keys[i%len(keys)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

func BenchmarkEmbeddedGet(b *testing.B) {
	ctx := context.Background()
	e, keys := benchStore(b)
	value := make([]byte, 64)
	for _, k := range keys {
		if err := e.Set(ctx, k, value, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	parallel(b, keys, func(k string) error {
		_, _, err := e.Get(ctx, k)
		return err
	})
}

func BenchmarkEmbeddedSet(b *testing.B) {
	ctx := context.Background()
	e, keys := benchStore(b)
	value := make([]byte, 64)
	parallel(b, keys, func(k string) error { return e.Set(ctx, k, value, time.Hour) })
}

// BenchmarkEmbeddedSetNX measures an in-flight lock's cycle: SetNX to take it, then
// CompareAndSwap to nil to release it.
func BenchmarkEmbeddedSetNX(b *testing.B) {
	ctx := context.Background()
	e, keys := benchStore(b)
	token := []byte("owner-token")
	parallel(b, keys, func(k string) error {
		ok, err := e.SetNX(ctx, k, token, time.Minute)
		if err != nil || !ok {
			return err // another goroutine holds this key: fine, count the attempt
		}
		_, err = e.CompareAndSwap(ctx, k, token, nil, time.Minute)
		return err
	})
}

func BenchmarkEmbeddedIncr(b *testing.B) {
	ctx := context.Background()
	e, keys := benchStore(b)
	parallel(b, keys, func(k string) error {
		_, err := e.Incr(ctx, k, 1, time.Hour)
		return err
	})
}
