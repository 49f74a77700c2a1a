package resilience

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// BreakersConfig is the breakers section: one circuit breaker per backend, each with the
// settings of Backends[name] laid over Default, laid over the built-in defaults (a field
// left out takes the next layer's value). Absent, the breaker stage is not in the chain;
// present, even empty, every backend has a breaker.
type BreakersConfig struct {
	// Default applies to every backend Backends does not name, and fills the fields a
	// Backends entry leaves out.
	Default BreakerSettings `yaml:"default" json:"default,omitzero"`
	// Backends overrides Default per backend: a gRPC backend by its name, an MCP server as
	// "mcp/" + its name.
	Backends map[string]BreakerSettings `yaml:"backends" json:"backends,omitempty"`
}

// BreakerSettings are the thresholds of one breaker. A breaker opens when, over the last
// Window, at least MinRequests calls were judged (Judge) and at least FailureRatio of them
// were backend faults; it refuses every call for OpenDuration, then lets HalfOpenProbes
// calls through: it closes when they all succeed and opens again at the first fault.
type BreakerSettings struct {
	// FailureRatio is the share of faults among judged calls that opens the breaker, in
	// (0, 1] (default 0.5).
	FailureRatio float64 `yaml:"failure_ratio" json:"failure_ratio,omitempty"`
	// MinRequests is how many judged calls the window must hold before the ratio counts
	// (default 20), so that a few failures of a quiet backend do not open it.
	MinRequests int `yaml:"min_requests" json:"min_requests,omitempty"`
	// Window is the sliding window the ratio is taken over (default 10s); it slides in
	// steps of a tenth of itself.
	Window time.Duration `yaml:"window" json:"window,omitempty"`
	// OpenDuration is how long an open breaker refuses calls before it lets probes through
	// (default 5s).
	OpenDuration time.Duration `yaml:"open_duration" json:"open_duration,omitempty"`
	// HalfOpenProbes is how many calls a half-open breaker lets through at once, all of
	// which must succeed to close it (default 3).
	HalfOpenProbes int `yaml:"half_open_probes" json:"half_open_probes,omitempty"`
	// TimeoutBudget is the least time a call must have had left when it was sent for its
	// DEADLINE_EXCEEDED to count as a fault (default 1s): a shorter deadline is the caller's
	// choice and says nothing about the backend.
	TimeoutBudget time.Duration `yaml:"timeout_budget" json:"timeout_budget,omitempty"`
}

// Defaults and bounds of a breaker's settings.
const (
	DefaultFailureRatio   = 0.5
	DefaultMinRequests    = 20
	DefaultBreakerWindow  = 10 * time.Second
	DefaultOpenDuration   = 5 * time.Second
	DefaultHalfOpenProbes = 3
	DefaultTimeoutBudget  = time.Second

	// MinBreakerWindow bounds window below: it slides in steps of a tenth of itself.
	MinBreakerWindow = 100 * time.Millisecond
	// MaxBreakerDuration bounds window, open_duration and timeout_budget.
	MaxBreakerDuration = time.Hour
	// MaxMinRequests bounds min_requests.
	MaxMinRequests = 1_000_000
	// MaxHalfOpenProbes bounds half_open_probes.
	MaxHalfOpenProbes = 1000
)

// builtinBreaker are the built-in defaults every layer of settings is laid over.
var builtinBreaker = BreakerSettings{
	FailureRatio:   DefaultFailureRatio,
	MinRequests:    DefaultMinRequests,
	Window:         DefaultBreakerWindow,
	OpenDuration:   DefaultOpenDuration,
	HalfOpenProbes: DefaultHalfOpenProbes,
	TimeoutBudget:  DefaultTimeoutBudget,
}

// over returns s with its zero fields taken from def.
func (s BreakerSettings) over(def BreakerSettings) BreakerSettings {
	zeroTo(&s.FailureRatio, def.FailureRatio)
	zeroTo(&s.MinRequests, def.MinRequests)
	zeroTo(&s.Window, def.Window)
	zeroTo(&s.OpenDuration, def.OpenDuration)
	zeroTo(&s.HalfOpenProbes, def.HalfOpenProbes)
	zeroTo(&s.TimeoutBudget, def.TimeoutBudget)
	return s
}

// For returns the settings of the breaker of backend, every field filled.
func (c BreakersConfig) For(backend string) BreakerSettings {
	def := c.Default.over(builtinBreaker)
	if s, ok := c.Backends[backend]; ok {
		return s.over(def)
	}
	return def
}

// Validate reports every problem of c with its defaults applied; paths are relative to
// the section. Whether each name in Backends is a backend of the configuration is the
// server's to check.
func (c BreakersConfig) Validate() []ConfigError {
	errs := c.Default.over(builtinBreaker).problems("default.")
	names := make([]string, 0, len(c.Backends))
	for name := range c.Backends {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == "" {
			errs = append(errs, ConfigError{Path: "backends", Msg: "a backend name must not be empty"})
			continue
		}
		errs = append(errs, c.For(name).problems(BackendPath(name)+".")...)
	}
	return errs
}

// BackendPath is the path of backend's entry in the section, as configuration errors
// name it: backends.NAME, or backends["NAME"] for a name that is not a plain key.
func BackendPath(backend string) string {
	if backend == "" || strings.ContainsFunc(backend, func(r rune) bool {
		return strings.ContainsRune(`.[]"`, r) || unicode.IsSpace(r) || !unicode.IsPrint(r)
	}) {
		return "backends[" + strconv.Quote(backend) + "]"
	}
	return "backends." + backend
}

// problems reports what is out of range in s, at paths under prefix.
func (s BreakerSettings) problems(prefix string) []ConfigError {
	var errs []ConfigError
	bad := func(key, format string, args ...any) {
		errs = append(errs, ConfigError{Path: prefix + key, Msg: fmt.Sprintf(format, args...)})
	}
	if !(s.FailureRatio > 0 && s.FailureRatio <= 1) {
		bad("failure_ratio", "failure_ratio is %g: it must be more than 0 and at most 1", s.FailureRatio)
	}
	if s.MinRequests < 1 || s.MinRequests > MaxMinRequests {
		bad("min_requests", "min_requests is %d: it must be between 1 and %d", s.MinRequests, MaxMinRequests)
	}
	if s.Window < MinBreakerWindow || s.Window > MaxBreakerDuration {
		bad("window", "window is %s: it must be between %s and %s", s.Window, MinBreakerWindow, MaxBreakerDuration)
	}
	if s.OpenDuration < time.Millisecond || s.OpenDuration > MaxBreakerDuration {
		bad("open_duration", "open_duration is %s: it must be between 1ms and %s", s.OpenDuration, MaxBreakerDuration)
	}
	if s.HalfOpenProbes < 1 || s.HalfOpenProbes > MaxHalfOpenProbes {
		bad("half_open_probes", "half_open_probes is %d: it must be between 1 and %d", s.HalfOpenProbes, MaxHalfOpenProbes)
	}
	if s.TimeoutBudget < 0 || s.TimeoutBudget > MaxBreakerDuration {
		bad("timeout_budget", "timeout_budget is %s: it must be between 0 and %s", s.TimeoutBudget, MaxBreakerDuration)
	}
	return errs
}
