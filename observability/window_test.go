package observability_test

import (
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestWindowHistogramCoversEveryBound(t *testing.T) {
	w := observability.NewWindow(time.Second, 2, 1, nil)
	// a call longer than the largest bound must land in the last slot, not past it
	w.Observe(time.Now(), "b", time.Hour, observability.RecentError{}, false)
	if s := w.Series(); len(s) != 1 || s[0].Calls != 1 || s[0].P99Ms != observability.DurationBuckets[len(observability.DurationBuckets)-1]*1000 {
		t.Fatalf("series %+v", s)
	}
}

func TestWindowSeries(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	type call struct {
		after   time.Duration // since start
		backend string
		d       time.Duration
		failed  bool
	}
	tests := []struct {
		name      string
		calls     []call
		at        time.Duration // when the series is read
		backend   string
		wantCalls int64
		wantErrs  int64
		wantP99   float64
		wantLast  int64 // calls in the newest bucket
	}{
		{name: "one fast call", calls: []call{{0, "calc", 3 * time.Millisecond, false}}, backend: "calc",
			wantCalls: 1, wantP99: 5, wantLast: 1},
		{name: "errors counted", calls: []call{{0, "calc", time.Millisecond, true}, {0, "calc", time.Millisecond, false}}, backend: "calc",
			wantCalls: 2, wantErrs: 1, wantP99: 1, wantLast: 2},
		{name: "p99 is the slow tail", calls: append(repeat(99, call{0, "calc", 80 * time.Microsecond, false}), call{0, "calc", 2 * time.Second, false}),
			backend: "calc", wantCalls: 100, wantP99: 0.1, wantLast: 100},
		{name: "p99 with more than one slow", calls: append(repeat(98, call{0, "calc", 80 * time.Microsecond, false}), repeat(2, call{0, "calc", 2 * time.Second, false})...),
			backend: "calc", wantCalls: 100, wantP99: 2500, wantLast: 100},
		{name: "older bucket stays in the window", calls: []call{{0, "calc", time.Millisecond, false}}, at: 25 * time.Second, backend: "calc",
			wantCalls: 1, wantP99: 1, wantLast: 0},
		{name: "past the window it is gone", calls: []call{{0, "calc", time.Millisecond, false}}, at: 40 * time.Second, backend: "calc",
			wantCalls: 0, wantLast: 0},
		{name: "a reused slot forgets its old bucket", calls: []call{{0, "calc", time.Millisecond, false}, {30 * time.Second, "calc", time.Millisecond, false}}, at: 30 * time.Second, backend: "calc",
			wantCalls: 1, wantP99: 1, wantLast: 1},
		{name: "backends apart", calls: []call{{0, "a", time.Millisecond, false}, {0, "b", time.Millisecond, true}}, backend: "a",
			wantCalls: 1, wantP99: 1, wantLast: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &fakeClock{start}
			w := observability.NewWindow(10*time.Second, 3, 10, clk.now)
			for _, c := range tt.calls {
				clk.t = start.Add(c.after)
				w.Observe(clk.t, c.backend, c.d, observability.RecentError{Code: schemas.CodeInternal}, c.failed)
			}
			clk.t = start.Add(tt.at)
			var got *observability.Series
			for _, s := range w.Series() {
				if s.Backend == tt.backend {
					got = &s
				}
			}
			if got == nil {
				t.Fatalf("no series for %q", tt.backend)
			}
			if len(got.Samples) != 3 {
				t.Fatalf("%d samples, want 3 (every bucket of the window)", len(got.Samples))
			}
			last := got.Samples[len(got.Samples)-1]
			if got.Calls != tt.wantCalls || got.Errors != tt.wantErrs || got.P99Ms != tt.wantP99 || last.Calls != tt.wantLast {
				t.Errorf("calls %d errors %d p99 %v last %d; want %d %d %v %d", got.Calls, got.Errors, got.P99Ms, last.Calls,
					tt.wantCalls, tt.wantErrs, tt.wantP99, tt.wantLast)
			}
			if got.Calls > 0 && got.ErrorRate != float64(got.Errors)/float64(got.Calls) {
				t.Errorf("error rate %v", got.ErrorRate)
			}
			if got.Samples[0].At >= last.At {
				t.Errorf("samples not oldest first: %d, %d", got.Samples[0].At, last.At)
			}
		})
	}
}

func repeat[T any](n int, v T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestWindowRecentErrors(t *testing.T) {
	tests := []struct {
		name  string
		codes []schemas.Code // in the order they failed
		code  schemas.Code
		limit int
		want  []schemas.Code // newest first
	}{
		{name: "newest first", codes: []schemas.Code{1, 2, 3}, want: []schemas.Code{3, 2, 1}},
		{name: "bounded ring drops the oldest", codes: []schemas.Code{1, 2, 3, 4, 5, 6}, want: []schemas.Code{6, 5, 4, 3}},
		{name: "ring wrapped twice", codes: []schemas.Code{1, 2, 3, 4, 5, 6, 7, 8, 9}, want: []schemas.Code{9, 8, 7, 6}},
		{name: "by code", codes: []schemas.Code{1, 2, 1, 2}, code: 2, want: []schemas.Code{2, 2}},
		{name: "limit", codes: []schemas.Code{1, 2, 3}, limit: 2, want: []schemas.Code{3, 2}},
		{name: "none", want: []schemas.Code{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := observability.NewWindow(time.Second, 2, 4, nil)
			for _, c := range tt.codes {
				w.Observe(time.Now(), "", 0, observability.RecentError{Code: c}, true)
			}
			got := w.RecentErrors(tt.code, tt.limit)
			codes := make([]schemas.Code, 0, len(got))
			for _, e := range got {
				codes = append(codes, e.Code)
			}
			if len(codes) != len(tt.want) {
				t.Fatalf("got %v, want %v", codes, tt.want)
			}
			for i := range codes {
				if codes[i] != tt.want[i] {
					t.Fatalf("got %v, want %v", codes, tt.want)
				}
			}
		})
	}
	if got := observability.NewWindow(time.Second, 2, 4, nil).Series(); len(got) != 0 {
		t.Errorf("a call with no backend made a series: %+v", got)
	}
}

func TestWindowObserveAllocs(t *testing.T) {
	w := observability.NewWindow(10*time.Second, 30, 10, nil)
	backend, now := string([]byte("calc")), time.Now() // not a constant
	w.Observe(now, backend, time.Millisecond, observability.RecentError{}, false)
	// generous headroom: a call to a known backend takes no allocation of its own
	if n := testing.AllocsPerRun(1000, func() { w.Observe(now, backend, time.Millisecond, observability.RecentError{}, false) }); n > 0.5 {
		t.Errorf("%v allocations per observed call", n)
	}
}

func BenchmarkWindowObserveParallel(b *testing.B) {
	w := observability.NewWindow(10*time.Second, 30, 10, nil)
	names, now := []string{"a", "b", "c", "d"}, time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			w.Observe(now, names[i%len(names)], time.Millisecond, observability.RecentError{}, false)
			i++
		}
	})
}

func BenchmarkWindowObserve(b *testing.B) {
	w, now := observability.NewWindow(10*time.Second, 30, 10, nil), time.Now()
	for b.Loop() {
		w.Observe(now, "calc", time.Millisecond, observability.RecentError{}, false)
	}
}
