// Package statetest is the contract suite of [state.KV]: every backend, embedded or Redis,
// must pass [RunKV] unchanged, and [RunBus] and [RunCellRater] for the optional [state.Bus]
// and [state.CellRater] it implements.
//
// It imports only state.
package statetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/state"
)

// Real TTLs the suite sleeps through: a Redis server's clock cannot be faked.
const (
	short = 50 * time.Millisecond  // expires during the test
	slack = 15 * time.Millisecond  // added to a sleep that must outlast a TTL
	long  = 100 * time.Millisecond // must not expire before the test's next step
	never = time.Minute            // outlives the test
)

// testCase is one rule of the contract, run against a fresh KV.
type testCase struct {
	name string
	run  func(t *kvt)
}

// RunKV runs the contract suite, one parallel subtest per rule, each against a KV that open
// returns. open must return a new, open KV on every call, and may register cleanups on the
// t it is given; RunKV closes the KV (a second Close, returning ErrClosed, is fine). KVs
// from separate calls may share storage, such as one Redis database: every subtest writes
// only keys of its own, unique to the run.
//
// The size limits tested are those the KV reports through [state.Limited], else
// [state.DefaultLimits]. The suite sleeps through real TTLs of tens of milliseconds and
// takes a few hundred milliseconds of wall time.
func RunKV(t *testing.T, open func(t *testing.T) state.KV) {
	t.Helper()
	var all []testCase
	for _, group := range [][]testCase{valueCases, expiryCases, incrCases, ruleCases, concurrencyCases} {
		all = append(all, group...)
	}
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			kv := open(t)
			t.Cleanup(func() { _ = kv.Close() })
			c.run(&kvt{T: t, kv: kv, ctx: t.Context()})
		})
	}
}

// runID keeps keys of separate runs against one shared store apart.
var runID = func() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

var keySeq atomic.Int64

// kvt is a subtest with the KV under test and helpers that fail the test on unexpected
// errors.
type kvt struct {
	*testing.T
	kv  state.KV
	ctx context.Context
}

// key returns a key no other subtest or run uses.
func (t *kvt) key() string {
	return fmt.Sprintf("statetest:%s:%d", runID, keySeq.Add(1))
}

// keyOfLen returns a unique key of exactly n bytes.
func (t *kvt) keyOfLen(n int) string {
	k := t.key()
	if n < len(k) {
		return k[len(k)-n:]
	}
	return k + strings.Repeat("k", n-len(k))
}

func (t *kvt) limits() state.Limits {
	if l, ok := t.kv.(state.Limited); ok {
		return l.Limits()
	}
	return state.DefaultLimits()
}

func (t *kvt) set(key, value string, ttl time.Duration) {
	t.Helper()
	if err := t.kv.Set(t.ctx, key, []byte(value), ttl); err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
}

func (t *kvt) setNX(key, value string, ttl time.Duration) bool {
	t.Helper()
	ok, err := t.kv.SetNX(t.ctx, key, []byte(value), ttl)
	if err != nil {
		t.Fatalf("SetNX(%q): %v", key, err)
	}
	return ok
}

func (t *kvt) cas(key string, oldValue, newValue []byte, ttl time.Duration) bool {
	t.Helper()
	ok, err := t.kv.CompareAndSwap(t.ctx, key, oldValue, newValue, ttl)
	if err != nil {
		t.Fatalf("CompareAndSwap(%q, %q, %q): %v", key, oldValue, newValue, err)
	}
	return ok
}

func (t *kvt) del(key string) bool {
	t.Helper()
	ok, err := t.kv.Delete(t.ctx, key)
	if err != nil {
		t.Fatalf("Delete(%q): %v", key, err)
	}
	return ok
}

func (t *kvt) incr(key string, delta int64, ttl time.Duration) int64 {
	t.Helper()
	n, err := t.kv.Incr(t.ctx, key, delta, ttl)
	if err != nil {
		t.Fatalf("Incr(%q, %d): %v", key, delta, err)
	}
	return n
}

// wantValue checks that key holds want.
func (t *kvt) wantValue(key, want string) {
	t.Helper()
	got, ok, err := t.kv.Get(t.ctx, key)
	switch {
	case err != nil:
		t.Errorf("Get(%q): %v", key, err)
	case !ok:
		t.Errorf("Get(%q) = absent, want %q", key, want)
	case got == nil:
		t.Errorf("Get(%q) = nil value with ok, want %q (non-nil)", key, want)
	case string(got) != want:
		t.Errorf("Get(%q) = %q, want %q", key, got, want)
	}
}

// wantAbsent checks that key holds no live entry.
func (t *kvt) wantAbsent(key string) {
	t.Helper()
	got, ok, err := t.kv.Get(t.ctx, key)
	switch {
	case err != nil:
		t.Errorf("Get(%q): %v", key, err)
	case ok || got != nil:
		t.Errorf("Get(%q) = %q, %v; want absent (nil, false)", key, got, ok)
	}
}

// wantErr checks that err matches target.
func (t *kvt) wantErr(what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want %v", what, err, target)
	}
}

// timed runs attempt, whose assertions hold only if its setup finished in time, measured
// from start. An attempt that finds its setup overran (a loaded machine) returns false: it
// is inconclusive and runs again with fresh keys, up to three times, so that a slow
// scheduler cannot fail a correct backend.
func (t *kvt) timed(attempt func(start time.Time) bool) {
	t.Helper()
	for range 3 {
		if attempt(time.Now()) {
			return
		}
	}
	t.Skip("setup overran its time budget three times: timing too noisy to test")
}

// within reports whether less than d has passed since start.
func within(start time.Time, d time.Duration) bool { return time.Since(start) < d }

// sleepUntil waits until d has passed since start.
func sleepUntil(start time.Time, d time.Duration) { time.Sleep(time.Until(start.Add(d))) }
