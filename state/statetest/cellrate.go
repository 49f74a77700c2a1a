package statetest

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/state"
)

// CellKV is a KV that is also a CellRater, such as both backends.
type CellKV interface {
	state.KV
	state.CellRater
}

// cellt is a CellRater subtest with helpers.
type cellt struct {
	*kvt
	cr state.CellRater
}

type cellCase struct {
	name string
	run  func(t *cellt)
}

// RunCellRater runs the contract suite of [state.CellRater], one parallel subtest per
// rule, each on a KV that open returns, as [RunKV] does.
func RunCellRater(t *testing.T, open func(t *testing.T) CellKV) {
	t.Helper()
	for _, c := range cellCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			kv := open(t)
			t.Cleanup(func() { _ = kv.Close() })
			c.run(&cellt{kvt: &kvt{T: t, kv: kv, ctx: t.Context()}, cr: kv})
		})
	}
}

// epoch is a fixed instant for tests that pass their own now: 2026-01-01 UTC.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (t *cellt) take(key string, now time.Time, interval time.Duration, burst int64) (bool, int64) {
	t.Helper()
	ok, tat, err := t.cr.TakeCell(t.ctx, key, now, interval, burst)
	if err != nil {
		t.Fatalf("TakeCell(%q, %v, %v, %d): %v", key, now.UnixNano(), interval, burst, err)
	}
	return ok, tat
}

// gcra is the reference decision: the stored TAT (absent or malformed: ok false), now,
// T and τ give whether the call is allowed and the TAT after it.
func gcra(stored int64, ok bool, now, t, tau int64) (bool, int64) {
	tat := now
	if ok && stored > now {
		tat = stored
	}
	if tat+t-now > tau {
		return false, tat
	}
	return true, tat + t
}

var cellCases = []cellCase{
	{"BurstThenRefusal", func(t *cellt) {
		k, n, T := t.key(), epoch.UnixNano(), int64(time.Second)
		for i := int64(1); i <= 3; i++ {
			ok, tat := t.take(k, epoch, time.Second, 3)
			if !ok || tat != n+i*T {
				t.Fatalf("take %d of a burst of 3 = %v, TAT %d; want true, %d", i, ok, tat, n+i*T)
			}
		}
		ok, tat := t.take(k, epoch, time.Second, 3)
		if ok || tat != n+3*T {
			t.Errorf("take 4 of a burst of 3 = %v, TAT %d; want false, %d (unchanged)", ok, tat, n+3*T)
		}
		t.wantValue(k, strconv.FormatInt(n+3*T, 10)) // as KVBuckets writes it
	}},
	{"RefillAfterInterval", func(t *cellt) {
		k, n, T := t.key(), epoch.UnixNano(), int64(time.Second)
		t.take(k, epoch, time.Second, 2)
		t.take(k, epoch, time.Second, 2)
		if ok, _ := t.take(k, epoch.Add(time.Second-time.Nanosecond), time.Second, 2); ok {
			t.Errorf("take 1ns before a token is back = allowed")
		}
		ok, tat := t.take(k, epoch.Add(time.Second), time.Second, 2)
		if !ok || tat != n+3*T {
			t.Errorf("take one interval later = %v, %d; want true, %d", ok, tat, n+3*T)
		}
		ok, tat = t.take(k, epoch.Add(time.Hour), time.Second, 2)
		if !ok || tat != n+int64(time.Hour)+T {
			t.Errorf("take after a long idle = %v, %d; want true, %d (a full bucket)", ok, tat, n+int64(time.Hour)+T)
		}
	}},
	{"IdleBucketExpires", func(t *cellt) {
		k := t.key()
		t.take(k, time.Now(), short, 1) // TTL = TAT − now = short
		sleepUntil(time.Now(), short+slack)
		t.wantAbsent(k)
		if ok, _ := t.take(k, time.Now(), short, 1); !ok {
			t.Errorf("take on an expired bucket = refused")
		}
	}},
	{"TTLIsTATMinusNow", func(t *cellt) {
		k := t.key()
		t.timed(func(start time.Time) bool {
			// Burst 4 of long/4: four takes leave TAT = now + long.
			for range 4 {
				t.take(k, start, long/4, 4)
			}
			written := time.Now() // the last take's TTL ran from before this
			if !within(start, long/2) {
				return false
			}
			sleepUntil(start, long/2)
			if _, ok, _ := t.kv.Get(t.ctx, k); !ok {
				t.Errorf("bucket gone before TAT")
			}
			sleepUntil(written, long+slack)
			t.wantAbsent(k)
			return true
		})
	}},
	{"MalformedIsFull", func(t *cellt) {
		n, T := epoch.UnixNano(), int64(time.Second)
		values := []string{"", "garbage", "+5", "07", "-0", " 5", "1.5", "99999999999999999999",
			strconv.FormatInt(n+10*T, 10) + "x", strconv.FormatInt(n-5*T, 10)}
		for _, v := range values {
			k := t.key()
			t.set(k, v, never)
			ok, tat := t.take(k, epoch, time.Second, 2)
			if !ok || tat != n+T {
				t.Errorf("stored %q: take = %v, %d; want true, %d (TAT = now)", v, ok, tat, n+T)
			}
		}
		k := t.key()
		t.set(k, strconv.FormatInt(n+2*T, 10), never) // a future TAT is honoured
		if ok, tat := t.take(k, epoch, time.Second, 2); ok || tat != n+2*T {
			t.Errorf("stored TAT now+2T, burst 2: take = %v, %d; want false, %d", ok, tat, n+2*T)
		}
	}},
	{"Concurrency", func(t *cellt) {
		const racers, burst = 32, 10
		k := t.key()
		var allowed atomic.Int32
		race(racers, func(int) {
			ok, _, err := t.cr.TakeCell(t.ctx, k, epoch, time.Hour, burst)
			if err != nil {
				t.Errorf("TakeCell: %v", err)
			}
			if ok {
				allowed.Add(1)
			}
		})
		if got := allowed.Load(); got != burst {
			t.Errorf("%d of %d concurrent takes on a burst of %d allowed, want exactly %d", got, racers, burst, burst)
		}
	}},
	{"MatchesReference", func(t *cellt) {
		// Random steps over the int64 range's corners, checked against gcra: exact
		// nanosecond arithmetic, whatever the backend computes with.
		rng := rand.New(rand.NewPCG(uint64(keySeq.Add(1)), 7)) //nolint:gosec // test inputs, not secrets
		starts := []int64{epoch.UnixNano(), -5_000_000_123, 0, 999_999_999, math.MaxInt64 / 4}
		for _, start := range starts {
			k := t.key()
			n := start
			var stored int64
			has := false
			for range 40 {
				T := time.Second + time.Duration(rng.Int64N(int64(time.Second)))
				burst := 1 + rng.Int64N(4)
				wantOK, wantTAT := gcra(stored, has, n, int64(T), int64(T)*burst)
				ok, tat := t.take(k, time.Unix(0, n), T, burst)
				if ok != wantOK || tat != wantTAT {
					t.Fatalf("start %d: take at %d, T %d, burst %d = %v, %d; want %v, %d", start, n, T, burst, ok, tat, wantOK, wantTAT)
				}
				if ok {
					stored, has = tat, true
				}
				n += rng.Int64N(int64(T) + 1)
			}
		}
	}},
	{"Invalid", func(t *cellt) {
		k := t.key()
		for _, c := range []struct {
			interval time.Duration
			burst    int64
		}{{0, 1}, {-time.Second, 1}, {time.Second, 0}, {time.Second, -1}, {time.Hour, math.MaxInt64 / 1000}} {
			_, _, err := t.cr.TakeCell(t.ctx, k, epoch, c.interval, c.burst)
			t.wantErr("TakeCell interval "+c.interval.String()+" burst "+strconv.FormatInt(c.burst, 10), err, state.ErrInvalidCell)
		}
		t.wantAbsent(k)
		_, _, err := t.cr.TakeCell(t.ctx, strings.Repeat("k", t.limits().MaxKeyBytes+1), epoch, time.Second, 1)
		t.wantErr("TakeCell over the key limit", err, state.ErrTooLarge)
		ctx, cancel := context.WithCancel(t.ctx)
		cancel()
		_, _, err = t.cr.TakeCell(ctx, k, epoch, time.Second, 1)
		t.wantErr("TakeCell with a cancelled context", err, context.Canceled)
		t.wantAbsent(k)
		if err := t.kv.Close(); err != nil {
			t.Fatal(err)
		}
		_, _, err = t.cr.TakeCell(t.ctx, k, epoch, time.Second, 1)
		if !errors.Is(err, state.ErrClosed) {
			t.Errorf("TakeCell after Close: %v, want ErrClosed", err)
		}
	}},
}
