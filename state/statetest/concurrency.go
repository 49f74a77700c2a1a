package statetest

import (
	"strconv"
	"sync"
	"sync/atomic"
)

// concurrencyCases cover atomicity under contention.
var concurrencyCases = []testCase{
	{"SetNXExclusive", func(t *kvt) {
		const rounds, racers = 5, 32
		for range rounds {
			k := t.key()
			var winners, winner atomic.Int32
			race(racers, func(i int) {
				ok, err := t.kv.SetNX(t.ctx, k, []byte(strconv.Itoa(i)), never)
				if err != nil {
					t.Errorf("SetNX: %v", err)
				}
				if ok {
					winners.Add(1)
					winner.Store(int32(i))
				}
			})
			if n := winners.Load(); n != 1 {
				t.Fatalf("%d of %d concurrent SetNX calls won, want exactly 1", n, racers)
			}
			t.wantValue(k, strconv.Itoa(int(winner.Load())))
		}
	}},
	{"CompareAndSwapExclusive", func(t *kvt) {
		// A counter kept with Get then CompareAndSwap loses no update only if every swap is
		// atomic.
		const racers, each = 8, 25
		k := t.key()
		race(racers, func(int) {
			for done := 0; done < each; {
				cur, ok, err := t.kv.Get(t.ctx, k)
				if err != nil {
					t.Errorf("Get: %v", err)
					return
				}
				n := 0
				if ok {
					n, _ = strconv.Atoi(string(cur))
				} else {
					cur = nil
				}
				swapped, err := t.kv.CompareAndSwap(t.ctx, k, cur, []byte(strconv.Itoa(n+1)), never)
				if err != nil {
					t.Errorf("CompareAndSwap: %v", err)
					return
				}
				if swapped {
					done++
				}
			}
		})
		t.wantValue(k, strconv.Itoa(racers*each))
	}},
	{"IncrAtomic", func(t *kvt) {
		const racers, each = 16, 50
		k := t.key()
		race(racers, func(int) {
			for range each {
				if _, err := t.kv.Incr(t.ctx, k, 1, never); err != nil {
					t.Errorf("Incr: %v", err)
					return
				}
			}
		})
		t.wantValue(k, strconv.Itoa(racers*each))
	}},
}

// race runs f(0) … f(n-1) in n goroutines released together, and waits for them.
func race(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}
