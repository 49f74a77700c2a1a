// Command soak runs the soak with its chaos schedule (internal/soak) and exits non-zero when
// a criterion failed. `make soak DURATION=10m` builds the binary and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/soak"
)

func main() {
	o := soak.Options{Log: os.Stdout}
	flag.DurationVar(&o.Duration, "duration", 3*time.Minute, "how long the traffic runs after the capacity measurement")
	flag.StringVar(&o.Bin, "bin", "bin/gatehouse", "the gatehouse binary")
	flag.StringVar(&o.Repo, "repo", ".", "the repository's root (development keys, docs/img)")
	flag.StringVar(&o.Dir, "dir", ".tmp/soak", "directory for the processes' logs, the configuration and report.md")
	flag.Float64Var(&o.Load, "load", 0.7, "share of the measured capacity the traffic runs at")
	flag.DurationVar(&o.Budget, "budget", 5*time.Second, "every call's deadline")
	flag.DurationVar(&o.Bound, "bound", 5*time.Second, "how long past its deadline a call may end before it counts as hung")
	flag.Float64Var(&o.Tolerance, "tolerance", 0.05, "flatness of the resources after warm-up (0.05 = ±5%)")
	flag.BoolVar(&o.Docs, "docs", os.Getenv("SOAK_DOCS") == "1", "write the plots to docs/img (SOAK_DOCS=1)")
	flag.Parse()
	var err error
	for _, p := range []*string{&o.Bin, &o.Repo, &o.Dir} {
		if *p, err = filepath.Abs(*p); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	rep, err := soak.Run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	if len(rep.Failed) > 0 {
		fmt.Fprintf(os.Stderr, "soak: FAIL (%d criteria; logs and report.md in %s)\n", len(rep.Failed), o.Dir)
		os.Exit(1)
	}
	fmt.Printf("soak: PASS (report.md in %s)\n", o.Dir)
}
