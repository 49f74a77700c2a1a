package soak

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at0(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestClassify(t *testing.T) {
	down := Window{Event: "replica", Start: at0(10), End: at0(20), Down: 2}
	other := Window{Event: "redis", Start: at0(30), End: at0(40), Down: -1}
	windows := []Window{down, other}
	bound := 5 * time.Second
	transport := errors.New("connection refused")
	tests := []struct {
		name string
		r    Result
		want Outcome
	}{
		{"a result", Result{Start: at0(1), Took: time.Millisecond, Budget: time.Second}, OK},
		{"a typed error", Result{Start: at0(1), Took: time.Millisecond, Budget: time.Second, Code: -32020}, Typed},
		{"a named typed error", Result{Start: at0(1), Budget: time.Second, Name: "credential_ended"}, Typed},
		{"transport error outside any window", Result{Replica: 2, Start: at0(5), Took: time.Second, Budget: time.Second, Transport: transport}, Unexpected},
		{"transport error to the replica down", Result{Replica: 2, Start: at0(12), Took: time.Second, Budget: time.Second, Transport: transport}, Expected},
		{"started before the kill, ended in it", Result{Replica: 2, Start: at0(9.5), Took: time.Second, Budget: 2 * time.Second, Transport: transport}, Expected},
		{"transport error to another replica in the window", Result{Replica: 1, Start: at0(12), Took: time.Second, Budget: time.Second, Transport: transport}, Unexpected},
		{"transport error in a window that downs no replica", Result{Replica: 2, Start: at0(32), Took: time.Second, Budget: time.Second, Transport: transport}, Unexpected},
		{"a wrong result", Result{Start: at0(1), Budget: time.Second, Wrong: "result 3, want 4"}, Unexpected},
		{"a wrong result beats a code", Result{Start: at0(1), Budget: time.Second, Code: 5002, Wrong: "x"}, Unexpected},
		{"timed out", Result{Start: at0(1), Budget: time.Second, TimedOut: true, Transport: transport}, Hung},
		{"past budget + bound", Result{Start: at0(1), Took: 6*time.Second + time.Millisecond, Budget: time.Second}, Hung},
		{"hung beats the replica window", Result{Replica: 2, Start: at0(12), Budget: time.Second, TimedOut: true, Transport: transport}, Hung},
		{"at budget + bound exactly", Result{Start: at0(1), Took: 6 * time.Second, Budget: time.Second}, OK},
	}
	counts := map[Outcome]int{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(tt.r, windows, bound)
			counts[got]++
			if got != tt.want {
				t.Fatalf("Classify = %v, want %v", got, tt.want)
			}
		})
	}
	t.Logf("outcomes: %v", counts)
}

// series is n samples a second apart from t0 with value f(i).
func series(n int, f func(i int) float64) []Sample {
	out := make([]Sample, n)
	for i := range out {
		out[i] = Sample{At: at0(float64(i)), Value: f(i)}
	}
	return out
}

func TestFlat(t *testing.T) {
	tests := []struct {
		name     string
		samples  []Sample
		warm     time.Time
		flat     bool
		why      bool
		minDelta float64 // |Change| at least
		slack    float64
	}{
		{"constant", series(30, func(int) float64 { return 100 }), t0, true, false, 0, 0},
		{"noise within 5%", series(30, func(i int) float64 { return 100 + float64(i%3) }), t0, true, false, 0, 0},
		{"a spike in each third is ignored", series(30, func(i int) float64 {
			if i%10 == 5 {
				return 1000
			}
			return 100
		}), t0, true, false, 0, 0},
		{"a steady leak", series(30, func(i int) float64 { return 100 + 2*float64(i) }), t0, false, false, 0.3, 0},
		{"a slow leak of 6%", series(30, func(i int) float64 { return 100 + 0.3*float64(i) }), t0, false, false, 0.05, 0},
		{"a drop", series(30, func(i int) float64 { return 100 - 2*float64(i) }), t0, false, false, 0.4, 0},
		{"the growth of warm-up is not judged", series(40, func(i int) float64 { return math.Min(100, float64(10*i)) }), at0(10), true, false, 0, 0},
		{"warm-up included it is", series(40, func(i int) float64 { return math.Min(100, float64(10*i)) }), t0, false, false, 0.1, 0},
		{"too few samples", series(5, func(int) float64 { return 1 }), t0, false, true, 0, 0},
		{"from zero", series(30, func(i int) float64 {
			if i < 15 {
				return 0
			}
			return 5
		}), t0, false, false, 1, 0},
		{"zero throughout", series(30, func(int) float64 { return 0 }), t0, true, false, 0, 0},
		{"a small count moving by the slack", series(30, func(i int) float64 { return 40 - 1.5*float64(i/10) }), t0, true, false, 0.07, 3},
		{"a small count leaking past the slack", series(30, func(i int) float64 { return 60 + float64(i/3) }), t0, false, false, 0.1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Flat(tt.samples, tt.warm, 0.05, tt.slack)
			t.Logf("%s", f.describe())
			if f.Flat != tt.flat || (f.Why != "") != tt.why {
				t.Fatalf("Flat = %+v, want flat %v (no verdict %v)", f, tt.flat, tt.why)
			}
			if math.Abs(f.Change) < tt.minDelta {
				t.Fatalf("change %v, want at least %v", f.Change, tt.minDelta)
			}
		})
	}
}

func TestOutside(t *testing.T) {
	s := series(10, func(i int) float64 { return float64(i) })
	got := Outside(s, []Window{{Start: at0(2), End: at0(4)}, {Start: at0(7.5), End: at0(8.5)}})
	var vs []float64
	for _, x := range got {
		vs = append(vs, x.Value)
	}
	if want := []float64{0, 1, 5, 6, 7, 9}; len(vs) != len(want) || !equal(vs, want) {
		t.Fatalf("Outside kept %v, want %v", vs, want)
	}
}

func equal(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMedianAndPercentile(t *testing.T) {
	if m := Median([]float64{5, 1, 3}); m != 3 {
		t.Fatalf("Median odd = %v", m)
	}
	if m := Median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Fatalf("Median even = %v", m)
	}
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0.001, time.Millisecond}} {
		if got := Percentile(ds, tt.q); got != tt.want {
			t.Fatalf("Percentile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if Percentile(nil, 0.5) != 0 {
		t.Fatal("Percentile of none")
	}
}

func TestSVG(t *testing.T) {
	start := t0
	s := []Series{
		{Name: "replica 0", Samples: series(10, func(i int) float64 { return float64(i) })},
		// A gap (the replica down) breaks the line in two.
		{Name: "replica <2>", Samples: append(series(3, func(int) float64 { return 1 }), Sample{At: at0(9), Value: 2}, Sample{At: at0(10), Value: 2})},
	}
	svg := SVG("RSS & co", "MiB", start, s, []Mark{{At: at0(5), Label: "kill -9"}})
	for _, want := range []string{"<svg", "RSS &amp; co", "replica &lt;2&gt;", "kill -9", "</svg>"} {
		if !strings.Contains(svg, want) {
			t.Fatalf("the plot lacks %q:\n%s", want, svg)
		}
	}
	if n := strings.Count(svg, "<polyline"); n != 3 {
		t.Fatalf("%d lines, want 3 (one broken at the gap)", n)
	}
}

func TestParseTCPTable(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:A1B2 0100007F:18EB 01 00000000:00000000 00:00000000 00000000     0        0 111 1 0000000000000000 20 4 30 10 -1
   1: 0100007F:A1B3 0100007F:18EB 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F90 0100007F:A1B4 08 00000000:00000000 00:00000000 00000000     0        0 333 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:A1B5 0100007F:18EB 01 00000000:00000000 00:00000000 00000000     0        0 444 1 0000000000000000 20 4 30 10 -1
`
	// 0x18EB = 6379, 0x1F90 = 8080, 0xA1B4 = 41396; state 08 is CLOSE_WAIT; inode 444 is
	// another process's socket
	got := parseTCPTable(table, map[string]bool{"111": true, "222": true, "333": true})
	want := []tcpSocket{{0xA1B2, 6379, true}, {0xA1B3, 6379, true}, {8080, 41396, false}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}
