// Command gate runs the quality gate (package gate): the seven integration scenarios of
// spec §4.10.5, each -runs times, against an in-process gateway with real peers; it prints
// the report and exits 1 when the gate fails (2 when it could not run).
//
//	go run ./internal/gate/cmd/gate [-runs N] [-pass-rate 0.998] [-max-critical 0] [-slo-factor 1] [-scenario name,…]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/gate"
)

func main() {
	os.Exit(run())
}

func run() int {
	th := gate.DefaultThresholds()
	runs := flag.Int("runs", gate.DefaultRuns, "runs of each scenario")
	flag.Float64Var(&th.PassRate, "pass-rate", th.PassRate, "least share of checks that must pass (θ)")
	flag.IntVar(&th.MaxCritical, "max-critical", th.MaxCritical, "most critical checks (security, auth propagation, data integrity) that may fail")
	flag.Float64Var(&th.SLOFactor, "slo-factor", th.SLOFactor, "factor on every scenario's p99 latency SLO")
	only := flag.String("scenario", "", "comma-separated scenarios to run (default all: "+strings.Join(gate.Names(), ",")+")")
	verbose := flag.Bool("v", false, "log what the environment does")
	flag.Parse()
	var scenarios []string
	if *only != "" {
		scenarios = strings.Split(*only, ",")
		for _, s := range scenarios {
			if !slices.Contains(gate.Names(), s) {
				fmt.Fprintf(os.Stderr, "gate: no scenario %q (the scenarios: %s)\n", s, strings.Join(gate.Names(), ","))
				return 2
			}
		}
	}

	t := &runner{verbose: *verbose}
	defer t.cleanup()
	began := time.Now()
	var rep gate.Report
	if !t.do(func() {
		rep = gate.Run(t, gate.Options{Runs: *runs, Thresholds: th, Scenarios: scenarios,
			Logf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }})
	}) {
		return 2
	}
	rep.Print(os.Stdout)
	fmt.Printf("(%d runs per scenario in %s)\n", *runs, time.Since(began).Round(time.Second))
	if !rep.Pass {
		return 1
	}
	return 0
}

// runner is the testing.TB the gate's environment is set up with outside a test: Fatal
// and Skip stop the run (the gate cannot run), Cleanup runs at exit, last first.
type runner struct {
	testing.TB // unused methods of the interface; every one the environment calls is below
	verbose    bool
	mu         sync.Mutex
	cleanups   []func()
	failed     bool
	dirs       []string
}

// stopRun is what Fatal and Skip panic with; do recovers it.
type stopRun struct{ msg string }

// do runs f, reporting false when it was stopped by Fatal or Skip.
func (r *runner) do(f func()) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			s, isStop := v.(stopRun)
			if !isStop {
				panic(v)
			}
			fmt.Fprintf(os.Stderr, "gate: cannot run: %s\n", s.msg)
			ok = false
		}
	}()
	f()
	return !r.Failed()
}

func (r *runner) cleanup() {
	r.mu.Lock()
	cs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for _, f := range slices.Backward(cs) {
		f()
	}
	for _, d := range r.dirs {
		_ = os.RemoveAll(d)
	}
}

func (r *runner) Cleanup(f func()) { r.mu.Lock(); r.cleanups = append(r.cleanups, f); r.mu.Unlock() }
func (r *runner) Helper()          {}
func (r *runner) Name() string     { return "gate" }
func (r *runner) Context() context.Context {
	return context.Background()
}

func (r *runner) Log(args ...any) {
	if r.verbose {
		fmt.Fprintln(os.Stderr, args...)
	}
}

func (r *runner) Logf(format string, args ...any) {
	if r.verbose {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}

func (r *runner) Error(args ...any) { r.Fail(); fmt.Fprintln(os.Stderr, args...) }
func (r *runner) Errorf(format string, args ...any) {
	r.Fail()
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}
func (r *runner) Fail()        { r.mu.Lock(); r.failed = true; r.mu.Unlock() }
func (r *runner) Failed() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.failed }
func (r *runner) FailNow()     { r.Fail(); r.stop("failed") }
func (r *runner) Fatal(args ...any) {
	r.Fail()
	r.stop(fmt.Sprint(args...))
}

func (r *runner) Fatalf(format string, args ...any) {
	r.Fail()
	r.stop(fmt.Sprintf(format, args...))
}
func (r *runner) Skip(args ...any)                 { r.stop(fmt.Sprint(args...)) }
func (r *runner) Skipf(format string, args ...any) { r.stop(fmt.Sprintf(format, args...)) }
func (r *runner) SkipNow()                         { r.stop("skipped") }
func (r *runner) Skipped() bool                    { return false }

// stop ends the run by a panic do recovers (the environment calls Fatal and Skip only
// while setting up, on do's goroutine).
func (r *runner) stop(msg string) {
	r.Fail()
	panic(stopRun{msg})
}

func (r *runner) TempDir() string {
	d, err := os.MkdirTemp("", "gate-")
	if err != nil {
		r.Fatal(err)
	}
	r.mu.Lock()
	r.dirs = append(r.dirs, d)
	r.mu.Unlock()
	return d
}

func (r *runner) Setenv(key, value string) {
	prev, had := os.LookupEnv(key)
	_ = os.Setenv(key, value)
	r.Cleanup(func() {
		if had {
			_ = os.Setenv(key, prev)
		} else {
			_ = os.Unsetenv(key)
		}
	})
}
