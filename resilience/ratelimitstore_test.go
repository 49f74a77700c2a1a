package resilience_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/redistest"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/state"
)

// casOnly hides every optional interface of a KV, CellRater included, so KVBuckets falls
// back to its read-compare-and-swap loop.
type casOnly struct{ state.KV }

// drawStep is one Take of a sequence: advance the clock, then draw from a bucket.
type drawStep struct {
	advance time.Duration
	key     string
	shape   resilience.Bucket
}

// drawSteps returns a fixed walk through bursts, refusals, partial refills and idle
// spells on three buckets, then n random steps; every interval is at least minInterval.
func drawSteps(n int, minInterval time.Duration) []drawStep {
	a := resilience.Bucket{Interval: minInterval, Burst: 3}
	b := resilience.Bucket{Interval: 3 * minInterval / 2, Burst: 1}
	c := resilience.Bucket{Interval: minInterval + 7, Burst: 5}
	steps := []drawStep{
		{0, "a", a}, {0, "a", a}, {0, "a", a}, {0, "a", a},
		{minInterval - 1, "a", a}, {1, "a", a}, {minInterval / 2, "a", a},
		{0, "b", b}, {0, "b", b}, {3 * minInterval / 4, "b", b},
		{0, "c", c}, {1, "c", c}, {10 * minInterval, "a", a}, {0, "c", c},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := []resilience.Bucket{a, b, c}
	for range n {
		i := rng.IntN(len(shapes))
		steps = append(steps, drawStep{
			advance: time.Duration(rng.Int64N(int64(minInterval))),
			key:     string(rune('a' + i)),
			shape:   shapes[i],
		})
	}
	return steps
}

// compareDraws runs steps on the one-call path (over cell) and the compare-and-swap
// path (over cas) at the same instants and checks that every Draw is the same.
func compareDraws(t *testing.T, cell, cas state.KV, clk *clock, steps []drawStep) {
	t.Helper()
	if _, ok := cell.(state.CellRater); !ok {
		t.Fatalf("%T is not a state.CellRater", cell)
	}
	one, loop := resilience.NewKVBuckets(cell), resilience.NewKVBuckets(casOnly{cas})
	ctx := context.Background()
	for i, s := range steps {
		clk.Add(s.advance)
		now := clk.Now()
		d1, err := one.Take(ctx, s.key, s.shape, now)
		if err != nil {
			t.Fatalf("step %d, CellRater path: %v", i, err)
		}
		d2, err := loop.Take(ctx, s.key, s.shape, now)
		if err != nil {
			t.Fatalf("step %d, compare-and-swap path: %v", i, err)
		}
		if d1 != d2 {
			t.Fatalf("step %d (%+v): CellRater path %+v, compare-and-swap path %+v", i, s, d1, d2)
		}
	}
}

func TestBucketPathsAgreeEmbedded(t *testing.T) {
	clk := newClock()
	compareDraws(t, newKV(t, clk), newKV(t, clk), clk, drawSteps(300, 100*time.Millisecond))
}

// TestBucketPathsAgreeRedis compares the one-script path with the compare-and-swap loop
// on a real Redis. Intervals are of seconds, so that no bucket expires in real time
// during the test while the injected clock says it should not.
func TestBucketPathsAgreeRedis(t *testing.T) {
	srv := redistest.Start(t)
	open := func() state.KV {
		r, err := state.NewRedis(state.RedisConfig{Addrs: []string{srv.Addr}, KeyPrefix: srv.Prefix(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		return r
	}
	clk := newClock()
	compareDraws(t, open(), open(), clk, drawSteps(150, 2*time.Second))
}
