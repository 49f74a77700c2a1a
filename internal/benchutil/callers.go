// Package benchutil holds what benchmarks in several packages share.
package benchutil

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Callers makes b.N calls from exactly c goroutines (unlike b.RunParallel, whose count
// scales with GOMAXPROCS), stopping a goroutine at its first error. Each call gets a
// context that ends after a minute, so a hung peer fails the benchmark instead of hanging it.
func Callers(b *testing.B, c int, call func(context.Context) error) {
	b.Helper()
	b.ReportAllocs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range c {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := call(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
