package resilience_test

import (
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/resilience"
)

// adaptiveDriver feeds a limiter windows of calls with a given latency on a simulated
// clock: each window takes every place under the limit (or a given number) and gives them
// back over one window's time, so each window after the first updates the limit once.
type adaptiveDriver struct {
	l      *resilience.AdaptiveLimiter
	now    time.Time
	window time.Duration
}

func newAdaptiveDriver(cfg resilience.AdaptiveConfig) *adaptiveDriver {
	cfg = cfg.WithDefaults()
	return &adaptiveDriver{l: resilience.NewAdaptiveLimiter(cfg), now: time.UnixMilli(1_700_000_000_000), window: cfg.Window}
}

// run plays n windows of calls that take rtt, with at most inflight of them at once (0:
// as many as the limit allows), and returns the limit after each window.
func (d *adaptiveDriver) run(t *testing.T, n int, rtt time.Duration, inflight int) []int {
	t.Helper()
	limits := make([]int, 0, n)
	for range n {
		taken := 0
		for (inflight == 0 || taken < inflight) && d.l.TryAcquire() {
			taken++
		}
		if taken == 0 {
			t.Fatal("no place under the limit")
		}
		for range taken {
			d.now = d.now.Add(d.window / time.Duration(taken))
			d.l.Release(d.now, rtt, true)
		}
		limits = append(limits, d.l.Limit())
	}
	if got := d.l.Inflight(); got != 0 {
		t.Fatalf("%d places still taken", got)
	}
	return limits
}

var adaptiveBase = resilience.AdaptiveConfig{
	InitialLimit: 20, MinLimit: 10, MaxLimit: 40, Smoothing: 0.5, Tolerance: 1.5,
	Window: 100 * time.Millisecond, BaselineWindow: 10 * time.Second,
}

func nonDecreasing(s []int) bool {
	for i := 1; i < len(s); i++ {
		if s[i] < s[i-1] {
			return false
		}
	}
	return true
}

func nonIncreasing(s []int) bool {
	for i := 1; i < len(s); i++ {
		if s[i] > s[i-1] {
			return false
		}
	}
	return true
}

// TestAdaptiveLimitFollowsLatency: flat latency grows the limit up to max_limit; latency
// rising past tolerance × the baseline shrinks it down to min_limit.
func TestAdaptiveLimitFollowsLatency(t *testing.T) {
	t.Run("flat latency: grows to max_limit", func(t *testing.T) {
		d := newAdaptiveDriver(adaptiveBase)
		got := d.run(t, 60, 10*time.Millisecond, 0)
		if !nonDecreasing(got) || got[len(got)-1] != adaptiveBase.MaxLimit {
			t.Errorf("limits %v, want non-decreasing up to %d", got, adaptiveBase.MaxLimit)
		}
	})
	t.Run("latency within tolerance: still grows", func(t *testing.T) {
		d := newAdaptiveDriver(adaptiveBase)
		d.run(t, 5, 10*time.Millisecond, 0)
		got := d.run(t, 20, 14*time.Millisecond, 0)
		if !nonDecreasing(got) || got[len(got)-1] <= adaptiveBase.InitialLimit {
			t.Errorf("limits %v, want growth at 1.4× the baseline (tolerance 1.5)", got)
		}
	})
	t.Run("rising latency: shrinks to min_limit", func(t *testing.T) {
		d := newAdaptiveDriver(adaptiveBase)
		before := d.run(t, 20, 10*time.Millisecond, 0)
		got := d.run(t, 30, 50*time.Millisecond, 0)
		if !nonIncreasing(got) || got[0] >= before[len(before)-1] || got[len(got)-1] != adaptiveBase.MinLimit {
			t.Errorf("limits %v after %v, want a fall down to %d", got, before, adaptiveBase.MinLimit)
		}
	})
	t.Run("at most halved per window", func(t *testing.T) {
		cfg := adaptiveBase
		cfg.Smoothing, cfg.MinLimit = 1, 1
		d := newAdaptiveDriver(cfg)
		d.run(t, 3, time.Millisecond, 0)
		before := d.l.Limit()
		got := d.run(t, 1, time.Second, 0)
		if got[0] < before/2 {
			t.Errorf("limit %d → %d on a 1000× latency, want at least half", before, got[0])
		}
	})
	t.Run("min baseline forgets after its window", func(t *testing.T) {
		cfg := adaptiveBase
		cfg.Baseline, cfg.BaselineWindow = resilience.BaselineMin, time.Second
		d := newAdaptiveDriver(cfg)
		d.run(t, 10, 10*time.Millisecond, 0)
		got := d.run(t, 40, 50*time.Millisecond, 0) // 4 s: the 10 ms baseline is forgotten after 1 s
		lowest := got[0]
		for _, v := range got {
			lowest = min(lowest, v)
		}
		if lowest >= got[0] || got[len(got)-1] <= lowest {
			t.Errorf("limits %v: want a fall, then growth once 50 ms is the baseline", got)
		}
	})
	t.Run("average baseline comes back down after an overload", func(t *testing.T) {
		d := newAdaptiveDriver(adaptiveBase)   // a 10 s average: 1% per window
		d.run(t, 100, 100*time.Millisecond, 0) // a long overload: the baseline is 100 ms
		d.run(t, 60, 10*time.Millisecond, 0)   // over: the stale baseline decays towards 20 ms
		got := d.run(t, 5, 40*time.Millisecond, 0)
		if got[len(got)-1] >= adaptiveBase.MaxLimit {
			t.Errorf("limits %v: 2× the recovered baseline should shrink the limit (a baseline still near 100 ms would not)", got)
		}
	})
}

// TestAdaptiveLimitAppLimited: while callers use less than half the limit their latency
// does not move it, however high.
func TestAdaptiveLimitAppLimited(t *testing.T) {
	d := newAdaptiveDriver(adaptiveBase)
	d.run(t, 5, 10*time.Millisecond, 0)
	d.run(t, 3, 10*time.Millisecond, 5) // past the windows that saw the whole limit in use
	before := d.l.Limit()
	got := d.run(t, 20, time.Second, 5)
	for _, v := range got {
		if v != before {
			t.Fatalf("limits %v, want %d throughout", got, before)
		}
	}
}

// TestAdaptiveLimitRefusesPastLimit: the limit is a hard cap on places taken.
func TestAdaptiveLimitRefusesPastLimit(t *testing.T) {
	l := resilience.NewAdaptiveLimiter(resilience.AdaptiveConfig{InitialLimit: 3, MinLimit: 3, MaxLimit: 3})
	for i := range 3 {
		if !l.TryAcquire() {
			t.Fatalf("place %d refused under the limit", i+1)
		}
	}
	if l.TryAcquire() {
		t.Fatal("a 4th place under a limit of 3")
	}
	l.Release(time.Now(), time.Millisecond, true)
	if !l.TryAcquire() {
		t.Fatal("a place given back was not reusable")
	}
}

// TestAdaptiveLimitIgnoresNonSamples: releases that are not latency signals move nothing,
// and retry_after follows the last window's latency.
func TestAdaptiveLimitIgnoresNonSamples(t *testing.T) {
	d := newAdaptiveDriver(adaptiveBase)
	if got := d.l.RetryAfter(); got != time.Millisecond {
		t.Errorf("retry after %s before any window, want 1ms", got)
	}
	d.run(t, 5, 10*time.Millisecond, 0)
	before := d.l.Limit()
	for range 200 {
		if !d.l.TryAcquire() {
			t.Fatal("refused")
		}
		d.now = d.now.Add(time.Millisecond)
		d.l.Release(d.now, 10*time.Second, false)
	}
	if got := d.l.Limit(); got != before {
		t.Errorf("limit %d after non-samples, want %d", got, before)
	}
	if got := d.l.RetryAfter(); got != 10*time.Millisecond {
		t.Errorf("retry after %s, want the last window's 10ms", got)
	}
}
