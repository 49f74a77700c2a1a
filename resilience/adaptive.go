package resilience

import (
	"math"
	"sync"
	"time"
)

// AdaptiveConfig is admission.global: the gateway-wide adaptive concurrency limit. It is a
// gradient limit in the manner of Netflix's concurrency-limits (Gradient2) and Envoy's
// adaptive concurrency filter: the latency of admitted calls, averaged over each Window, is
// compared with a baseline latency; while it stays within Tolerance × the baseline the limit
// grows by about √limit per window, and when queueing pushes it higher the limit shrinks in
// proportion (by at most half per window), smoothed by Smoothing and kept within
// [MinLimit, MaxLimit]. Calls past the limit are refused at once with OVERLOADED.
type AdaptiveConfig struct {
	// Enabled turns the global limit on; absent, it is on whenever the admission section is.
	Enabled *bool `yaml:"enabled" json:"enabled,omitempty"`
	// InitialLimit is the limit the gateway starts with.
	InitialLimit int `yaml:"initial_limit" json:"initial_limit,omitempty"`
	// MinLimit and MaxLimit bound the limit.
	MinLimit int `yaml:"min_limit" json:"min_limit,omitempty"`
	MaxLimit int `yaml:"max_limit" json:"max_limit,omitempty"`
	// Smoothing (0 < s ≤ 1) is the weight of each window's new estimate against the
	// current limit: lower reacts more slowly and more steadily.
	Smoothing float64 `yaml:"smoothing" json:"smoothing,omitempty"`
	// Tolerance (≥ 1) is how far above the baseline the latency may rise before the limit
	// shrinks: 1.5 lets admitted calls queue for up to half their unloaded latency.
	Tolerance float64 `yaml:"tolerance" json:"tolerance,omitempty"`
	// Window is the sample window: the limit is updated once per window, from the average
	// latency of the calls that finished in it (and at least adaptiveMinSamples of them).
	Window time.Duration `yaml:"window" json:"window,omitempty"`
	// Baseline is what the latency is compared with: BaselineAverage (the windows' latency
	// averaged exponentially over BaselineWindow) or BaselineMin (the lowest window latency
	// of the last BaselineWindow).
	Baseline string `yaml:"baseline" json:"baseline,omitempty"`
	// BaselineWindow is the time span of the baseline.
	BaselineWindow time.Duration `yaml:"baseline_window" json:"baseline_window,omitempty"`
}

// Baseline kinds of AdaptiveConfig.Baseline.
const (
	BaselineAverage = "average"
	BaselineMin     = "min"
)

// Default settings of the global adaptive limit.
const (
	DefaultAdaptiveInitialLimit   = 64
	DefaultAdaptiveMinLimit       = 8
	DefaultAdaptiveMaxLimit       = 1000
	DefaultAdaptiveSmoothing      = 0.2
	DefaultAdaptiveTolerance      = 1.5
	DefaultAdaptiveWindow         = 100 * time.Millisecond
	DefaultAdaptiveBaseline       = BaselineAverage
	DefaultAdaptiveBaselineWindow = time.Minute
)

const (
	// adaptiveMinSamples is the fewest latencies a window needs before it updates the limit:
	// fewer say too little about queueing.
	adaptiveMinSamples = 10
	// minGradient bounds the shrink of one update, so one outlier window cannot halve the
	// limit more than once.
	minGradient = 0.5
	// baselineDecay and baselineStale bring an average baseline back down quickly once a
	// long overload ends: when it is more than baselineStale × the latency it decays by
	// baselineDecay per window instead of waiting for the average.
	baselineDecay = 0.95
	baselineStale = 2.0
)

// WithDefaults returns c with zero fields set to their defaults.
func (c AdaptiveConfig) WithDefaults() AdaptiveConfig {
	zeroTo(&c.InitialLimit, DefaultAdaptiveInitialLimit)
	zeroTo(&c.MinLimit, DefaultAdaptiveMinLimit)
	zeroTo(&c.MaxLimit, DefaultAdaptiveMaxLimit)
	zeroTo(&c.Smoothing, DefaultAdaptiveSmoothing)
	zeroTo(&c.Tolerance, DefaultAdaptiveTolerance)
	zeroTo(&c.Window, DefaultAdaptiveWindow)
	zeroTo(&c.Baseline, DefaultAdaptiveBaseline)
	zeroTo(&c.BaselineWindow, DefaultAdaptiveBaselineWindow)
	return c
}

// On reports whether the global limit is on.
func (c AdaptiveConfig) On() bool { return c.Enabled == nil || *c.Enabled }

// problems returns what is wrong with c (after WithDefaults); paths are relative to it.
func (c AdaptiveConfig) problems() []ConfigError {
	var out []ConfigError
	bad := func(path, format string, args ...any) { out = append(out, problemAt(path, format, args...)) }
	if c.MinLimit < 1 {
		bad("min_limit", "min_limit is %d: it must be at least 1", c.MinLimit)
	}
	if c.MaxLimit < c.MinLimit {
		bad("max_limit", "max_limit (%d) is below min_limit (%d)", c.MaxLimit, c.MinLimit)
	}
	if c.InitialLimit < c.MinLimit || c.InitialLimit > c.MaxLimit {
		bad("initial_limit", "initial_limit (%d) must be between min_limit (%d) and max_limit (%d)", c.InitialLimit, c.MinLimit, c.MaxLimit)
	}
	if !(c.Smoothing > 0 && c.Smoothing <= 1) {
		bad("smoothing", "smoothing is %g: it must be above 0 and at most 1", c.Smoothing)
	}
	if !(c.Tolerance >= 1) {
		bad("tolerance", "tolerance is %g: it must be at least 1", c.Tolerance)
	}
	if c.Window <= 0 {
		bad("window", "window must be positive")
	}
	if c.BaselineWindow <= c.Window {
		bad("baseline_window", "baseline_window (%s) must be longer than window (%s)", c.BaselineWindow, c.Window)
	}
	if c.Baseline != BaselineAverage && c.Baseline != BaselineMin {
		bad("baseline", "baseline is %q: it must be %q or %q", c.Baseline, BaselineAverage, BaselineMin)
	}
	return out
}

// AdaptiveLimiter is the gradient concurrency limit of AdaptiveConfig. It is safe for
// concurrent use. A caller that got a place from TryAcquire must give it back with Release
// exactly once.
type AdaptiveLimiter struct {
	cfg AdaptiveConfig

	mu       sync.Mutex
	limit    float64
	inflight int
	// The open sample window: when it started, the latencies in it, and the most calls in
	// flight during it (a window that never used half the limit says nothing about it).
	windowStart time.Time
	windowSum   time.Duration
	windowN     int
	windowPeak  int
	// lastRTT is the average latency of the last closed window; 0 before the first.
	lastRTT  time.Duration
	baseline rttBaseline
}

// NewAdaptiveLimiter returns the limiter of cfg, which must be valid once its defaults are
// applied (WithDefaults is applied here).
func NewAdaptiveLimiter(cfg AdaptiveConfig) *AdaptiveLimiter {
	cfg = cfg.WithDefaults()
	l := &AdaptiveLimiter{cfg: cfg, limit: float64(cfg.InitialLimit)}
	if cfg.Baseline == BaselineMin {
		l.baseline = &minBaseline{half: cfg.BaselineWindow / 2}
	} else {
		l.baseline = &averageBaseline{alpha: min(float64(cfg.Window)/float64(cfg.BaselineWindow), 1)}
	}
	return l
}

// TryAcquire takes a place under the limit, or reports false when every place is taken.
func (l *AdaptiveLimiter) TryAcquire() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight >= int(l.limit) {
		return false
	}
	l.inflight++
	l.windowPeak = max(l.windowPeak, l.inflight)
	return true
}

// Release gives back a place taken at now − rtt. sample says whether rtt is a latency
// signal (a completed call, or one that ran out of its deadline); calls that failed for
// other reasons, were refused further on or stream their result are not.
func (l *AdaptiveLimiter) Release(now time.Time, rtt time.Duration, sample bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	if !sample || rtt <= 0 {
		return
	}
	if l.windowN == 0 {
		l.windowStart = now
	}
	l.windowSum += rtt
	l.windowN++
	if l.windowN >= adaptiveMinSamples && now.Sub(l.windowStart) >= l.cfg.Window {
		l.closeWindow(now)
	}
}

// closeWindow updates the limit from the window's average latency and opens the next one.
func (l *AdaptiveLimiter) closeWindow(now time.Time) {
	rtt := float64(l.windowSum) / float64(l.windowN)
	l.lastRTT = time.Duration(rtt)
	base := l.baseline.observe(now, rtt)
	appLimited := float64(l.windowPeak) < l.limit/2
	l.windowSum, l.windowN, l.windowPeak = 0, 0, l.inflight
	if appLimited {
		return // the callers did not press on the limit: their latency cannot judge it
	}
	gradient := min(max(l.cfg.Tolerance*base/rtt, minGradient), 1)
	next := l.limit*gradient + math.Sqrt(l.limit)
	next = l.limit*(1-l.cfg.Smoothing) + next*l.cfg.Smoothing
	l.limit = min(max(next, float64(l.cfg.MinLimit)), float64(l.cfg.MaxLimit))
}

// Limit returns the current limit.
func (l *AdaptiveLimiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.limit)
}

// Inflight returns the places taken.
func (l *AdaptiveLimiter) Inflight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inflight
}

// RetryAfter is when a refused caller may try again: about the latency of a call, after
// which places have turned over (at least a millisecond).
func (l *AdaptiveLimiter) RetryAfter() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.lastRTT, time.Millisecond)
}

// rttBaseline is the latency a window's latency is compared with.
type rttBaseline interface {
	// observe feeds the average latency of a window closed at now and returns the baseline.
	observe(now time.Time, rtt float64) float64
}

// averageBaseline averages window latencies exponentially, alpha being one window's weight.
type averageBaseline struct {
	alpha float64
	value float64
}

func (b *averageBaseline) observe(_ time.Time, rtt float64) float64 {
	if b.value == 0 {
		b.value = rtt
		return rtt
	}
	b.value += b.alpha * (rtt - b.value)
	if b.value > baselineStale*rtt {
		b.value *= baselineDecay
	}
	return b.value
}

// minBaseline is the lowest window latency of the last baseline window, kept as the minima
// of two half windows (the current and the previous one).
type minBaseline struct {
	half      time.Duration
	cur, prev float64
	started   time.Time // when cur's half window began
}

func (b *minBaseline) observe(now time.Time, rtt float64) float64 {
	switch age := now.Sub(b.started); {
	case b.started.IsZero() || age >= 2*b.half:
		b.cur, b.prev, b.started = 0, 0, now
	case age >= b.half:
		b.prev, b.cur, b.started = b.cur, 0, b.started.Add(b.half)
	}
	if b.cur == 0 || rtt < b.cur {
		b.cur = rtt
	}
	if b.prev > 0 && b.prev < b.cur {
		return b.prev
	}
	return b.cur
}

// zeroTo sets *p to def when it is the zero value.
func zeroTo[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}
