// Package soak runs the platform — Redis, a gRPC backend, three gateway replicas sharing
// Redis, the MCP child each replica spawns and a compute agent — as real processes on
// 127.0.0.1, drives mixed traffic at a fraction of its measured capacity across every face
// while a chaos schedule kills and restarts its parts, samples each process's resources,
// and judges the run: every call classified, nothing hung, no unexpected error, resources
// flat after warm-up. `make soak` runs it (make/soak.mk); docs/reliability.md says what it
// checks and what a run showed.
package soak

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// Outcome is how one call ended, as the run judges it.
type Outcome int

const (
	// OK is a result, the one expected.
	OK Outcome = iota
	// Typed is an explicit error of the protocol, with its code.
	Typed
	// Expected is a transport error while the replica called was down on purpose.
	Expected
	// Unexpected is a transport error outside such a window, an error without a code, or a
	// wrong result.
	Unexpected
	// Hung is a call with no end by its deadline plus the bound.
	Hung
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Typed:
		return "typed"
	case Expected:
		return "expected"
	case Unexpected:
		return "unexpected"
	case Hung:
		return "hung"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Result is what a caller saw of one call, before it is judged.
type Result struct {
	Face    string
	Replica int
	Start   time.Time
	Took    time.Duration
	// Budget is the deadline the call was given (from Start).
	Budget time.Duration
	// TimedOut is set when the caller gave up at Budget + the bound with no end.
	TimedOut bool
	// Code is the typed error's code (JSON-RPC, NEKTE, session) or 0; Name its name when
	// the protocol has one (a session errorId, a revoked credential).
	Code int
	Name string
	// Msg is the typed error's message and data, for the report's examples.
	Msg string
	// Transport is the error when no answer of the protocol came at all.
	Transport error
	// Wrong describes an answer that is neither the expected result nor a typed error.
	Wrong string
}

// Window is a span of the run in which a chaos event happens and the platform recovers.
type Window struct {
	Event string
	Start time.Time
	End   time.Time
	// Down is the replica that is down during the window (-1 for none): transport errors of
	// calls to it are expected.
	Down int
}

// Covers reports whether the window overlaps the call [start, start+took].
func (w Window) Covers(start time.Time, took time.Duration) bool {
	return !start.After(w.End) && !start.Add(took).Before(w.Start)
}

// Classify judges one call against the chaos windows: hung beats everything, then a wrong
// answer, then a transport error (expected only for the replica a window has down), then a
// typed error, else ok.
func Classify(r Result, windows []Window, bound time.Duration) Outcome {
	if r.TimedOut || r.Took > r.Budget+bound {
		return Hung
	}
	if r.Wrong != "" {
		return Unexpected
	}
	if r.Transport != nil {
		for _, w := range windows {
			if w.Down >= 0 && w.Down == r.Replica && w.Covers(r.Start, r.Took) {
				return Expected
			}
		}
		return Unexpected
	}
	if r.Code != 0 || r.Name != "" {
		return Typed
	}
	return OK
}

// Sample is one reading of a series at a time.
type Sample struct {
	At    time.Time
	Value float64
}

// Flatness is the verdict on one series: the median of the last third of the samples after
// warm-up against the median of the first third.
type Flatness struct {
	First, Last float64
	// Change is (Last-First)/First; Flat is |Change| <= the tolerance.
	Change float64
	N      int
	Flat   bool
	// Why says why no verdict could be reached (too few samples); Flat is then false.
	Why string
}

// Outside returns the samples taken outside every window: the platform's steady state, not
// its recovery from a chaos event (a leak that an event causes stays after its window and so
// still shows).
func Outside(samples []Sample, windows []Window) []Sample {
	var out []Sample
	for _, s := range samples {
		in := false
		for _, w := range windows {
			if w.Covers(s.At, 0) {
				in = true
				break
			}
		}
		if !in {
			out = append(out, s)
		}
	}
	return out
}

// MinFlatSamples is the fewest samples after warm-up a series needs to be judged.
const MinFlatSamples = 6

// Flat judges whether the samples taken at or after warm are flat within tol (0.05 = ±5%):
// the median of the last third against the median of the first third. Medians make one
// outlier (a GC cycle, a burst of in-flight calls) irrelevant, and comparing thirds rather
// than first and last sample asks whether the level moved, not whether it wobbles. slack is
// an absolute change always allowed (for small counts, where one pooled connection is more
// than tol); 0 for none.
func Flat(samples []Sample, warm time.Time, tol, slack float64) Flatness {
	var vs []float64
	for _, s := range samples {
		if !s.At.Before(warm) {
			vs = append(vs, s.Value)
		}
	}
	f := Flatness{N: len(vs)}
	if len(vs) < MinFlatSamples {
		f.Why = fmt.Sprintf("%d samples after warm-up, need %d", len(vs), MinFlatSamples)
		return f
	}
	third := len(vs) / 3
	f.First = Median(vs[:third])
	f.Last = Median(vs[len(vs)-third:])
	switch {
	case f.First == 0 && f.Last == 0:
		f.Change = 0
	case f.First == 0:
		f.Change = math.Inf(1)
	default:
		f.Change = (f.Last - f.First) / f.First
	}
	f.Flat = math.Abs(f.Change) <= tol || math.Abs(f.Last-f.First) <= slack
	return f
}

// Median of vs (not modified); 0 for none.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Percentile is the nearest-rank q-quantile (0 < q <= 1) of ds; 0 for none.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	slices.Sort(s)
	i := min(max(int(math.Ceil(q*float64(len(s))))-1, 0), len(s)-1)
	return s[i]
}
