package state_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gatehouse-dev/gatehouse/state"
	"github.com/gatehouse-dev/gatehouse/state/statetest"
)

func TestEmbeddedContract(t *testing.T) {
	t.Run("Defaults", func(t *testing.T) {
		statetest.RunKV(t, func(*testing.T) state.KV { return state.NewEmbedded(state.EmbeddedOptions{}) })
	})
	t.Run("SmallLimits", func(t *testing.T) {
		statetest.RunKV(t, func(*testing.T) state.KV {
			return state.NewEmbedded(state.EmbeddedOptions{MaxKeyBytes: 40, MaxValueBytes: 100})
		})
	})
}

// clock is a fake clock, safe for concurrent use.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// newFake returns a store on a fake clock whose janitor never runs during a test.
func newFake(t *testing.T, maxEntries int) (*state.Embedded, *clock) {
	t.Helper()
	c := newClock()
	e := state.NewEmbedded(state.EmbeddedOptions{MaxEntries: maxEntries, SweepInterval: time.Hour, Now: c.Now})
	t.Cleanup(func() { _ = e.Close() })
	return e, c
}

func mustGet(t *testing.T, kv state.KV, key string) (string, bool) {
	t.Helper()
	v, ok, err := kv.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return string(v), ok
}

func TestEmbeddedExpiryOnFakeClock(t *testing.T) {
	ctx := context.Background()
	e, c := newFake(t, 0)
	if err := e.Set(ctx, "k", []byte("v"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c.Advance(10*time.Second - time.Nanosecond)
	if v, ok := mustGet(t, e, "k"); !ok || v != "v" {
		t.Fatalf("Get 1ns before expiry = %q, %v; want v", v, ok)
	}
	c.Advance(time.Nanosecond)
	if v, ok := mustGet(t, e, "k"); ok {
		t.Fatalf("Get at expiry = %q, want absent", v)
	}
	if n := e.Len(); n != 0 {
		t.Errorf("Len after reading an expired entry = %d, want 0 (removed on the way)", n)
	}
}

func TestEmbeddedIncrTTLOnFakeClock(t *testing.T) {
	ctx := context.Background()
	e, c := newFake(t, 0)
	incr := func(ttl time.Duration) int64 {
		t.Helper()
		n, err := e.Incr(ctx, "c", 1, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	incr(10 * time.Second)
	c.Advance(9 * time.Second)
	if n := incr(time.Hour); n != 2 {
		t.Fatalf("second Incr = %d, want 2", n)
	}
	c.Advance(time.Second)
	if n := incr(10 * time.Second); n != 1 {
		t.Errorf("Incr 10s after the first = %d, want 1: the window must not be extended", n)
	}
}

func TestEmbeddedMaxEntries(t *testing.T) {
	ctx := context.Background()
	const limit = 8
	e, c := newFake(t, limit)
	for i := range limit {
		if err := e.Set(ctx, "k"+strconv.Itoa(i), []byte("v"), time.Duration(i+1)*time.Second); err != nil {
			t.Fatalf("Set %d of %d: %v", i+1, limit, err)
		}
	}
	wantFull := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, state.ErrFull) {
			t.Errorf("%s when full: error %v, want ErrFull", what, err)
		}
	}
	wantFull("Set", e.Set(ctx, "new", []byte("v"), time.Hour))
	_, err := e.SetNX(ctx, "new", []byte("v"), time.Hour)
	wantFull("SetNX", err)
	_, err = e.CompareAndSwap(ctx, "new", nil, []byte("v"), time.Hour)
	wantFull("CompareAndSwap", err)
	_, err = e.Incr(ctx, "new", 1, time.Hour)
	wantFull("Incr", err)
	if _, ok := mustGet(t, e, "new"); ok {
		t.Errorf("a refused write was stored")
	}

	// Entries already there stay writable; nothing was evicted.
	if err := e.Set(ctx, "k0", []byte("w"), time.Second); err != nil {
		t.Errorf("overwriting when full: %v", err)
	}
	if ok, err := e.SetNX(ctx, "k1", []byte("w"), time.Hour); ok || err != nil {
		t.Errorf("SetNX(present) when full = %v, %v; want false, nil", ok, err)
	}
	if ok, err := e.CompareAndSwap(ctx, "k1", []byte("v"), []byte("w"), 2*time.Second); !ok || err != nil {
		t.Errorf("CompareAndSwap(present) when full = %v, %v; want true, nil", ok, err)
	}
	for i := range limit {
		if _, ok := mustGet(t, e, "k"+strconv.Itoa(i)); !ok {
			t.Errorf("k%d was evicted", i)
		}
	}

	// Each second one entry expires, and exactly one new entry fits; its shard is seldom
	// the expired one's, so this exercises reclaiming from other shards.
	for i := range limit - 1 {
		c.Advance(time.Second)
		key := "new" + strconv.Itoa(i)
		if err := e.Set(ctx, key, []byte("v"), time.Hour); err != nil {
			t.Fatalf("Set after k%d expired: %v", i, err)
		}
		wantFull("Set of the next", e.Set(ctx, key+"+", []byte("v"), time.Hour))
		if n := e.Len(); n != limit {
			t.Errorf("Len = %d, want %d", n, limit)
		}
	}

	// Deleting makes room too.
	if ok, err := e.Delete(ctx, "new0"); !ok || err != nil {
		t.Fatalf("Delete = %v, %v", ok, err)
	}
	if err := e.Set(ctx, "after-delete", []byte("v"), time.Hour); err != nil {
		t.Errorf("Set after Delete: %v", err)
	}
	if err := state.CheckInvariants(e); err != nil {
		t.Error(err)
	}
}

func TestEmbeddedJanitor(t *testing.T) {
	// In a synctest bubble time.Now and the janitor's ticker share a fake clock that moves
	// only when every goroutine is blocked; the bubble also fails if the janitor outlives
	// Close.
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		e := state.NewEmbedded(state.EmbeddedOptions{SweepInterval: time.Second})
		// More expiring entries than one sweep batch takes from one shard.
		const expiring = 50_000
		for i := range expiring {
			if err := e.Set(ctx, "k"+strconv.Itoa(i), nil, 1500*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Set(ctx, "kept", nil, time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := e.Len(); n != expiring+1 {
			t.Errorf("Len after a sweep before expiry = %d, want %d", n, expiring+1)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := e.Len(); n != 1 {
			t.Errorf("Len after a sweep past expiry = %d, want 1", n)
		}
		if err := state.CheckInvariants(e); err != nil {
			t.Error(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if n := e.Len(); n != 0 {
			t.Errorf("Len after Close = %d, want 0", n)
		}
	})
}

func TestEmbeddedDefaults(t *testing.T) {
	e := state.NewEmbedded(state.EmbeddedOptions{MaxKeyBytes: -1, MaxValueBytes: -5, MaxEntries: -1, SweepInterval: -time.Second})
	defer e.Close()
	if got, want := e.Limits(), state.DefaultLimits(); got != want {
		t.Errorf("Limits() = %+v, want %+v", got, want)
	}
}

// TestEmbeddedConcurrent runs every operation on a few keys from many goroutines while the
// clock moves, the janitor sweeps and the store is full, then checks the shards' invariants.
func TestEmbeddedConcurrent(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	e := state.NewEmbedded(state.EmbeddedOptions{MaxEntries: 48, SweepInterval: time.Millisecond, Now: c.Now})
	defer e.Close()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 2000 {
				if err := randomOp(ctx, e, r); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 500 {
			c.Advance(time.Duration(rand.IntN(20)) * time.Millisecond)
			time.Sleep(10 * time.Microsecond)
		}
	})
	wg.Wait()
	if err := state.CheckInvariants(e); err != nil {
		t.Error(err)
	}
}

// randomOp runs one random operation on one of 64 keys and returns any error that is not
// an expected outcome of the race.
func randomOp(ctx context.Context, e *state.Embedded, r *rand.Rand) error {
	key := "k" + strconv.Itoa(r.IntN(64))
	ttl := time.Duration(1+r.IntN(50)) * time.Millisecond
	val := []byte(strconv.Itoa(r.IntN(4)))
	var err error
	switch r.IntN(6) {
	case 0:
		_, _, err = e.Get(ctx, key)
	case 1:
		err = e.Set(ctx, key, val, ttl)
	case 2:
		_, err = e.SetNX(ctx, key, val, ttl)
	case 3:
		_, err = e.CompareAndSwap(ctx, key, val, []byte(strconv.Itoa(r.IntN(4))), ttl)
	case 4:
		_, err = e.Delete(ctx, key)
	default:
		_, err = e.Incr(ctx, key, 1, ttl)
	}
	if err != nil && !errors.Is(err, state.ErrFull) {
		return fmt.Errorf("op on %s: %w", key, err)
	}
	return nil
}

// TestEmbeddedCloseWhileBusy closes the store under load: every call either completes or
// returns ErrClosed, and Close waits for the janitor.
func TestEmbeddedCloseWhileBusy(t *testing.T) {
	ctx := context.Background()
	e := state.NewEmbedded(state.EmbeddedOptions{SweepInterval: time.Millisecond})
	var wg sync.WaitGroup
	var closedSeen atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 2))
			for {
				err := randomOp(ctx, e, r)
				if errors.Is(err, state.ErrClosed) {
					closedSeen.Add(1)
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if n := closedSeen.Load(); n != 8 {
		t.Errorf("%d of 8 workers saw ErrClosed", n)
	}
	if n := e.Len(); n != 0 {
		t.Errorf("Len after Close = %d, want 0", n)
	}
}
