package observability

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Defaults of a Window's bounds.
const (
	DefaultWindowBucket  = 10 * time.Second
	DefaultWindowBuckets = 30
	DefaultRecentErrors  = 200
)

// maxWindowBackends bounds the backends a Window keeps samples of. Backend names come from
// the configuration and the targets (resilience.BackendOf), so the bound is a guard, not a
// limit a configuration should reach; past it new backends are not sampled.
const maxWindowBackends = 1024

// Window keeps, per backend, the calls of the last few minutes in a fixed ring of time
// buckets (bucket width × buckets: 10 s × 30 by default) — count, failures and a histogram of
// durations over DurationBuckets, enough for calls/s, error rate and p99 — and the most
// recent failed calls, by code with their trace ids, in a bounded ring. It is fed by the
// metrics stage (what protocol_requests_total already observes) and read by the admin API
// (admin.backends, admin.errors.recent). Its memory is bounded: buckets × backends, and
// the errors ring. A nil *Window records nothing.
type Window struct {
	bucket time.Duration
	n      int
	now    func() time.Time

	// backends maps a backend's name to its *backendRing; each ring has its own lock, so
	// calls to different backends do not contend. nBackends counts them (maxWindowBackends).
	backends  sync.Map
	nBackends atomic.Int64

	errMu   sync.Mutex    // guards the errors ring, written only by failed calls
	errs    []RecentError // ring of cap errMax
	errNext int           // where the next error goes once the ring is full
	errMax  int
}

// backendRing is one backend's buckets; slot i holds the bucket whose start, in units of
// the bucket width since the Unix epoch, is stamp[i].
type backendRing struct {
	mu    sync.Mutex
	stamp []int64
	slots []windowBucket
}

// windowHistSlots is len(DurationBuckets)+1 (checked in window_test.go).
const windowHistSlots = 17

type windowBucket struct {
	calls, errors int64
	hist          [windowHistSlots]int64 // over DurationBuckets; the last: above the largest bound
}

// RecentError is one failed call as admin.errors.recent shows it.
type RecentError struct {
	// At is when the call ended (Unix ms).
	At int64 `json:"at"`
	// Code is the error's code and Kind its name in the error table ("" for a code
	// outside it).
	Code schemas.Code `json:"code"`
	Kind string       `json:"kind,omitempty"`
	// Message is the error's message.
	Message string `json:"message"`
	// Method is the method called, Backend the backend it reached ("" when none).
	Method  string `json:"method"`
	Backend string `json:"backend,omitempty"`
	// Protocol is the ingress protocol.
	Protocol string `json:"protocol"`
	// TraceID is the trace the call is recorded under.
	TraceID string `json:"trace_id"`
}

// NewWindow returns a window of buckets buckets of width bucket, keeping the errors most
// recent failed calls; zero values take the defaults. now is the clock (nil: time.Now).
func NewWindow(bucket time.Duration, buckets, errors int, now func() time.Time) *Window {
	if bucket <= 0 {
		bucket = DefaultWindowBucket
	}
	if buckets <= 0 {
		buckets = DefaultWindowBuckets
	}
	if errors <= 0 {
		errors = DefaultRecentErrors
	}
	if now == nil {
		now = time.Now
	}
	return &Window{bucket: bucket, n: buckets, now: now, errMax: errors}
}

// Observe records one call to backend that ended at end and took d; when failed, e is
// kept as a recent error. A call that reached no backend ("") counts in no backend's
// samples; its failure is still a recent error. The caller passes end (the time it read
// anyway to measure d) so that observing costs no clock read of its own; Series reads the
// window's clock, which must be the same.
func (w *Window) Observe(end time.Time, backend string, d time.Duration, e RecentError, failed bool) {
	if w == nil {
		return
	}
	stamp := end.UnixNano() / int64(w.bucket)
	if failed {
		w.pushError(e)
	}
	if backend == "" {
		return
	}
	r := w.ring(backend)
	if r == nil {
		return
	}
	i := int(stamp % int64(w.n))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stamp[i] != stamp {
		r.stamp[i], r.slots[i] = stamp, windowBucket{}
	}
	b := &r.slots[i]
	b.calls++
	if failed {
		b.errors++
	}
	s := d.Seconds()
	k, _ := slices.BinarySearch(DurationBuckets, s) // the first bound ≥ s
	b.hist[min(k, windowHistSlots-1)]++
}

// ring returns backend's ring, making it on its first call; nil past maxWindowBackends.
func (w *Window) ring(backend string) *backendRing {
	if r, ok := w.backends.Load(backend); ok {
		return r.(*backendRing) //nolint:forcetypeassert // only *backendRing is stored
	}
	if w.nBackends.Load() >= maxWindowBackends {
		return nil
	}
	fresh := &backendRing{stamp: make([]int64, w.n), slots: make([]windowBucket, w.n)}
	for i := range fresh.stamp {
		fresh.stamp[i] = -1
	}
	r, loaded := w.backends.LoadOrStore(backend, fresh)
	if !loaded {
		w.nBackends.Add(1)
	}
	return r.(*backendRing) //nolint:forcetypeassert // only *backendRing is stored
}

func (w *Window) pushError(e RecentError) {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	if len(w.errs) < w.errMax {
		w.errs = append(w.errs, e)
		return
	}
	w.errs[w.errNext] = e
	w.errNext = (w.errNext + 1) % w.errMax
}

// Sample is one bucket of a backend's calls, as admin.backends reports it.
type Sample struct {
	// At is the start of the bucket (Unix ms).
	At int64 `json:"at"`
	// Calls and Errors count the calls that ended in the bucket, and those that failed.
	Calls  int64 `json:"calls"`
	Errors int64 `json:"errors"`
	// CallsPerSecond is Calls over the bucket's width.
	CallsPerSecond float64 `json:"calls_per_second"`
	// P99Ms is the 99th percentile of the calls' durations, as the upper bound of the
	// histogram bucket it falls in (ms); 0 without calls.
	P99Ms float64 `json:"p99_ms"`
}

// Series is one backend's samples, oldest first, with the totals over them.
type Series struct {
	Backend string   `json:"backend"`
	Samples []Sample `json:"samples"`
	// Calls, Errors, ErrorRate (Errors / Calls, 0 without calls), CallsPerSecond and P99Ms
	// are over the whole window.
	Calls          int64   `json:"calls"`
	Errors         int64   `json:"errors"`
	ErrorRate      float64 `json:"error_rate"`
	CallsPerSecond float64 `json:"calls_per_second"`
	P99Ms          float64 `json:"p99_ms"`
}

// BucketWidth is the width of one bucket.
func (w *Window) BucketWidth() time.Duration {
	if w == nil {
		return DefaultWindowBucket
	}
	return w.bucket
}

// Series returns every backend's samples over the window ending now — every bucket, the
// empty ones too, so that charts share one time axis — ordered by backend.
func (w *Window) Series() []Series {
	if w == nil {
		return nil
	}
	cur := w.now().UnixNano() / int64(w.bucket)
	var out []Series
	w.backends.Range(func(k, v any) bool {
		name, r := k.(string), v.(*backendRing) //nolint:forcetypeassert // the map holds only these
		r.mu.Lock()
		defer r.mu.Unlock()
		s := Series{Backend: name, Samples: make([]Sample, 0, w.n)}
		var total windowBucket
		for stamp := cur - int64(w.n) + 1; stamp <= cur; stamp++ {
			var b windowBucket
			if i := int(stamp % int64(w.n)); stamp >= 0 && r.stamp[i] == stamp {
				b = r.slots[i]
			}
			s.Samples = append(s.Samples, Sample{
				At: time.Duration(stamp * int64(w.bucket)).Milliseconds(), Calls: b.calls, Errors: b.errors,
				CallsPerSecond: float64(b.calls) / w.bucket.Seconds(), P99Ms: b.p99Ms(),
			})
			total.calls += b.calls
			total.errors += b.errors
			for k := range b.hist {
				total.hist[k] += b.hist[k]
			}
		}
		s.Calls, s.Errors, s.P99Ms = total.calls, total.errors, total.p99Ms()
		s.CallsPerSecond = float64(total.calls) / (w.bucket.Seconds() * float64(w.n))
		if total.calls > 0 {
			s.ErrorRate = float64(total.errors) / float64(total.calls)
		}
		out = append(out, s)
		return true
	})
	slices.SortFunc(out, func(a, b Series) int {
		switch {
		case a.Backend < b.Backend:
			return -1
		case a.Backend > b.Backend:
			return 1
		}
		return 0
	})
	return out
}

// p99Ms is the upper bound (ms) of the histogram bucket holding the 99th percentile; past
// the largest bound, the largest bound.
func (b *windowBucket) p99Ms() float64 {
	if b.calls == 0 {
		return 0
	}
	rank := int64(math.Ceil(0.99 * float64(b.calls)))
	var seen int64
	for k, c := range b.hist {
		seen += c
		if seen >= rank {
			if k == len(DurationBuckets) {
				k--
			}
			return DurationBuckets[k] * 1000
		}
	}
	return DurationBuckets[len(DurationBuckets)-1] * 1000
}

// RecentErrors returns the recent failed calls, newest first; with code non-zero only those
// of that code; at most limit (0: all kept).
func (w *Window) RecentErrors(code schemas.Code, limit int) []RecentError {
	if w == nil {
		return nil
	}
	w.errMu.Lock()
	defer w.errMu.Unlock()
	out := make([]RecentError, 0, len(w.errs))
	n := len(w.errs)
	for j := range n {
		// newest first: the one before errNext, going back around the ring
		e := w.errs[((w.errNext-1-j)%n+n)%n]
		if n < w.errMax {
			e = w.errs[n-1-j]
		}
		if code != 0 && e.Code != code {
			continue
		}
		out = append(out, e)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out
}
