// Package gate is the quality gate of spec §4.10.5–§4.10.6: the seven integration
// scenarios (happy path, deadline propagation, auth propagation, batch semantics, stream
// lifecycle, version mismatch, circuit breaker) run end to end, each N times, against an
// in-process gateway with real peers — three real gRPC calculators, the demo MCP server as a
// stdio child, the reference agent on the agent link, and Jaeger for the traces — and the
// verdict Gate = PASS iff pass rate ≥ θ ∧ no critical failure ∧ p99 ≤ SLO per scenario.
//
// Run is called by the package's test (a small N, in `go test`) and by cmd/gate (`make
// gate`, the full N). docs/reliability.md ("The quality gate") says what each scenario
// checks and shows a real run's report.
package gate

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// Options configure a gate run.
type Options struct {
	// Runs is how many times each scenario runs (default DefaultRuns).
	Runs int
	// Thresholds are the gate's (default DefaultThresholds).
	Thresholds Thresholds
	// Scenarios, when not empty, names the scenarios to run (default: all seven).
	Scenarios []string
	// Logf, when set, receives a line per scenario as it finishes.
	Logf func(format string, args ...any)
}

// DefaultRuns is the number of runs of each scenario of a full gate: about 600 checks in
// all, well above the 500 a pass rate of 0.998 needs to mean something, in about a minute.
const DefaultRuns = 10

// scenario is one of the seven: its name, its latency SLO (p99 of its timed calls) and one run.
type scenario struct {
	name string
	slo  time.Duration
	run  func(ctx context.Context, e *env, r *rec, i int)
	// after runs once, after every run (checks deferred to the end, such as traces).
	after func(ctx context.Context, e *env, r *rec)
}

// Names are the scenarios in the order they run.
func Names() []string {
	var out []string
	for _, s := range scenarios() {
		out = append(out, s.name)
	}
	return out
}

func scenarios() []scenario {
	return []scenario{
		{name: "happy-path", slo: 2 * time.Second, run: happyPath, after: happyTraces},
		{name: "deadline-propagation", slo: 2 * deadlineBudget, run: deadlinePropagation},
		{name: "auth-propagation", slo: time.Second, run: authPropagation},
		{name: "batch-semantics", slo: time.Second, run: batchSemantics},
		{name: "stream-lifecycle", slo: missedBeats*beatEvery + 2*time.Second, run: streamLifecycle},
		{name: "version-mismatch", slo: time.Second, run: versionMismatch},
		{name: "circuit-breaker", slo: time.Second, run: circuitBreaker},
	}
}

// Run starts the environment, runs every scenario opts.Runs times and evaluates the gate.
// Setting up is t's to fail (Fatal); a scenario's failures are checks in the report.
func Run(t testing.TB, opts Options) Report {
	t.Helper()
	if opts.Runs <= 0 {
		opts.Runs = DefaultRuns
	}
	if opts.Thresholds == (Thresholds{}) {
		opts.Thresholds = DefaultThresholds()
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	e := setup(t)
	var results []Result
	for _, s := range scenarios() {
		if len(opts.Scenarios) > 0 && !slices.Contains(opts.Scenarios, s.name) {
			continue
		}
		r := &rec{res: Result{Scenario: s.name, SLO: s.slo}}
		began := time.Now()
		for i := range opts.Runs {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			s.run(ctx, e, r, i)
			cancel()
			r.res.Runs++
		}
		if s.after != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			s.after(ctx, e, r)
			cancel()
		}
		results = append(results, r.res)
		failed := 0
		for _, c := range r.res.Checks {
			if !c.Pass {
				failed++
			}
		}
		opts.Logf("%s: %d runs, %d checks, %d failed, in %s", s.name, r.res.Runs, len(r.res.Checks), failed, time.Since(began).Round(time.Millisecond))
	}
	return Evaluate(results, opts.Thresholds)
}

// rec records one scenario's checks and timed calls.
type rec struct{ res Result }

// check records a check: ok, or the detail of what was seen (format and args).
func (r *rec) check(name string, critical, ok bool, format string, args ...any) bool {
	c := Check{Name: name, Pass: ok, Critical: critical}
	if !ok {
		c.Detail = fmt.Sprintf(format, args...)
		if len(c.Detail) > 400 {
			c.Detail = c.Detail[:400] + "…"
		}
	}
	r.res.Checks = append(r.res.Checks, c)
	return ok
}

// timed runs f and records its latency.
func (r *rec) timed(f func()) time.Duration {
	began := time.Now()
	f()
	d := time.Since(began)
	r.res.Latencies = append(r.res.Latencies, d)
	return d
}
