package gate

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Check is the outcome of one assertion of one run of a scenario.
type Check struct {
	Name string
	Pass bool
	// Critical marks a check of security, auth propagation or data integrity (§4.10.6): one
	// such failure fails the gate whatever the pass rate.
	Critical bool
	// Detail says what was seen when the check failed.
	Detail string
}

// Result is what one scenario gave over its runs: every check, and the latency of every
// measured call against the scenario's SLO.
type Result struct {
	Scenario  string
	Runs      int
	Checks    []Check
	Latencies []time.Duration
	SLO       time.Duration
}

// Thresholds are the gate's: the least pass rate, the most critical failures (the spec: 0)
// and a factor on every scenario's latency SLO (1: the SLOs as they are).
type Thresholds struct {
	PassRate     float64
	MaxCritical  int
	SLOFactor    float64
	MaxFailShown int
}

// DefaultThresholds are the spec's gate: pass rate ≥ 0.998, no critical failure, p99 ≤ SLO.
func DefaultThresholds() Thresholds {
	return Thresholds{PassRate: 0.998, MaxCritical: 0, SLOFactor: 1, MaxFailShown: 20}
}

// Line is one scenario's row of the report.
type Line struct {
	Scenario         string
	Runs             int
	Checks, Passed   int
	Critical         int // critical checks failed
	P50, P99, SLO    time.Duration
	LatencyOK        bool
	PassRate         float64
	FailedCheckNames []string
}

// Report is the gate's verdict over every scenario.
type Report struct {
	Lines             []Line
	Checks, Passed    int
	Critical          int
	PassRate          float64
	LatencyOK         bool
	Pass              bool
	Reasons           []string // why the gate failed; empty on PASS
	Failures          []string // the failed checks, for the reader
	Thresholds        Thresholds
	TotalLatencyCalls int
}

// Evaluate applies the gate formula to the results:
// Gate = PASS iff passed/total ≥ θ ∧ critical failures ≤ max (0) ∧ p99 ≤ SLO in every scenario.
// A run without any check fails: nothing was verified.
func Evaluate(results []Result, th Thresholds) Report {
	r := Report{LatencyOK: true, Thresholds: th}
	for _, res := range results {
		l := Line{Scenario: res.Scenario, Runs: res.Runs, Checks: len(res.Checks), LatencyOK: true}
		l.SLO = time.Duration(float64(res.SLO) * th.SLOFactor)
		for _, c := range res.Checks {
			if c.Pass {
				l.Passed++
				continue
			}
			if c.Critical {
				l.Critical++
			}
			if !slices.Contains(l.FailedCheckNames, c.Name) {
				l.FailedCheckNames = append(l.FailedCheckNames, c.Name)
			}
			if len(r.Failures) < th.MaxFailShown || th.MaxFailShown <= 0 {
				crit := ""
				if c.Critical {
					crit = " [critical]"
				}
				r.Failures = append(r.Failures, fmt.Sprintf("%s: %s%s: %s", res.Scenario, c.Name, crit, c.Detail))
			}
		}
		if l.Checks > 0 {
			l.PassRate = float64(l.Passed) / float64(l.Checks)
		}
		l.P50, l.P99 = Percentile(res.Latencies, 0.50), Percentile(res.Latencies, 0.99)
		r.TotalLatencyCalls += len(res.Latencies)
		if len(res.Latencies) == 0 || l.P99 > l.SLO {
			l.LatencyOK = false
			r.LatencyOK = false
			if len(res.Latencies) == 0 {
				r.Reasons = append(r.Reasons, res.Scenario+": no latency measured")
			} else {
				r.Reasons = append(r.Reasons, fmt.Sprintf("%s: p99 %s > SLO %s", res.Scenario, round(l.P99), round(l.SLO)))
			}
		}
		r.Lines = append(r.Lines, l)
		r.Checks += l.Checks
		r.Passed += l.Passed
		r.Critical += l.Critical
	}
	if r.Checks > 0 {
		r.PassRate = float64(r.Passed) / float64(r.Checks)
	}
	if r.Checks == 0 {
		r.Reasons = append(r.Reasons, "no check ran")
	}
	if r.PassRate < th.PassRate {
		r.Reasons = append(r.Reasons, fmt.Sprintf("pass rate %.4f < %.4f", r.PassRate, th.PassRate))
	}
	if r.Critical > th.MaxCritical {
		r.Reasons = append(r.Reasons, fmt.Sprintf("%d critical failures > %d", r.Critical, th.MaxCritical))
	}
	r.Pass = len(r.Reasons) == 0
	return r
}

// Percentile is the nearest-rank q-quantile of ds (0 for none).
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}

// Print writes the report as a table, the failed checks and the verdict.
func (r Report) Print(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %5s %7s %9s %8s %10s %10s %10s  %s\n", "scenario", "runs", "checks", "pass rate", "critical", "p50", "p99", "SLO", "latency")
	for _, l := range r.Lines {
		ok := "ok"
		if !l.LatencyOK {
			ok = "OVER"
		}
		fmt.Fprintf(&b, "%-22s %5d %7d %9.4f %8d %10s %10s %10s  %s\n", l.Scenario, l.Runs, l.Checks, l.PassRate, l.Critical,
			round(l.P50), round(l.P99), round(l.SLO), ok)
	}
	fmt.Fprintf(&b, "overall: %d/%d checks passed, pass rate %.4f (θ %.3f), %d critical failures (max %d), %d calls timed\n",
		r.Passed, r.Checks, r.PassRate, r.Thresholds.PassRate, r.Critical, r.Thresholds.MaxCritical, r.TotalLatencyCalls)
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "FAIL %s\n", f)
	}
	if r.Pass {
		b.WriteString("Gate = PASS\n")
	} else {
		fmt.Fprintf(&b, "Gate = FAIL (%s)\n", strings.Join(r.Reasons, "; "))
	}
	_, _ = io.WriteString(w, b.String())
}
