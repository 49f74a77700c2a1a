// Command conformance runs the official MCP conformance suite against an MCP endpoint and
// judges the results against internal/conformance/expected-failures.txt.
//
// Without -url it serves the demo MCP fixture on 127.0.0.1 and tests that. It prints one
// row per scenario and the line "N passed, N failed", and exits 0 when every failure is
// expected and every expected failure still fails, 1 when not, and 2 when the suite could
// not be run. Everything binds loopback only, and -timeout bounds the whole run.
//
//	go run ./internal/conformance/cmd/conformance [-url http://127.0.0.1:8080/mcp]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/internal/conformance"
)

const closeGrace = 2 * time.Second

type config struct {
	url, tools, expected, out string
	scenarios                 []string
	timeout                   time.Duration
	verbose, check            bool
}

func main() {
	var cfg config
	var scenarios string
	flag.StringVar(&cfg.url, "url", "", "MCP endpoint to test; empty serves the demo MCP fixture on 127.0.0.1")
	flag.StringVar(&cfg.tools, "tools", conformance.DefaultToolsDir, "where make conformance-tools installed the suite and node")
	flag.StringVar(&cfg.expected, "expected", "internal/conformance/expected-failures.txt", "expected-failures file")
	flag.StringVar(&scenarios, "scenario", "", "comma-separated scenarios to run instead of the whole suite")
	flag.StringVar(&cfg.out, "out", "", "keep the suite's results in this (new or empty) directory")
	flag.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "bound on the whole run")
	flag.BoolVar(&cfg.verbose, "v", false, "copy the suite's own output to stderr")
	flag.BoolVar(&cfg.check, "check", false, "only check that the pinned suite and node are installed")
	flag.Parse()
	if scenarios != "" {
		cfg.scenarios = strings.Split(scenarios, ",")
	}
	ok, err := run(cfg)
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	case !ok:
		os.Exit(1)
	}
}

func run(cfg config) (ok bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()

	tools := conformance.Tools{Dir: cfg.tools}
	if err := tools.Check(ctx); err != nil {
		return false, err
	}
	if cfg.check {
		fmt.Printf("conformance suite %s and node %s installed in %s\n", conformance.SuiteVersion, conformance.NodeVersion, cfg.tools)
		return true, nil
	}
	raw, err := os.ReadFile(cfg.expected)
	if err != nil {
		return false, err
	}
	expected, err := conformance.ParseExpected(bytes.NewReader(raw))
	if err != nil {
		return false, fmt.Errorf("%s: %w", cfg.expected, err)
	}
	known, err := tools.Scenarios(ctx)
	if err != nil {
		return false, err
	}
	for _, s := range cfg.scenarios {
		if !slices.Contains(known, s) {
			return false, fmt.Errorf("-scenario %s: not a server scenario of the suite (%s)", s, strings.Join(known, ", "))
		}
	}

	if cfg.url == "" {
		fixture, err := conformance.ServeFixture("127.0.0.1:0", demo.MCPOptions{})
		if err != nil {
			return false, err
		}
		defer func() {
			closeCtx, cancelClose := context.WithTimeout(context.Background(), closeGrace)
			defer cancelClose()
			err = errors.Join(err, fixture.Close(closeCtx))
		}()
		cfg.url = fixture.URL
	}

	out := cfg.out
	if out == "" {
		tmp, err := os.MkdirTemp("", "conformance-")
		if err != nil {
			return false, err
		}
		defer func() { err = errors.Join(err, os.RemoveAll(tmp)) }()
		out = filepath.Join(tmp, "results")
	}
	var log io.Writer
	if cfg.verbose {
		log = os.Stderr
	}
	fmt.Printf("conformance suite %s (node %s) against %s\n", conformance.SuiteVersion, conformance.NodeVersion, cfg.url)
	start := time.Now()
	results, err := tools.Run(ctx, conformance.RunOptions{URL: cfg.url, Scenarios: cfg.scenarios, OutDir: out, Log: log})
	if err != nil {
		return false, err
	}
	verdict := conformance.Compare(results, expected, known)
	if err := conformance.WriteReport(os.Stdout, results, expected, verdict); err != nil {
		return false, err
	}
	fmt.Printf("suite ran in %s\n", time.Since(start).Round(10*time.Millisecond))
	return verdict.OK(), nil
}
