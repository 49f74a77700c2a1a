package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

// Check statuses the suite reports.
const (
	StatusSuccess = "SUCCESS"
	StatusFailure = "FAILURE"
	StatusWarning = "WARNING"
	StatusInfo    = "INFO"
)

// RunOptions says what to run.
type RunOptions struct {
	// URL is the MCP endpoint under test (streamable HTTP).
	URL string
	// Scenarios restricts the run to these scenarios; empty runs the whole suite,
	// pending scenarios included.
	Scenarios []string
	// SpecVersion, when set, runs the scenarios of that protocol version only (the
	// suite's --spec-version): with Scenarios empty, those ScenariosFor lists.
	SpecVersion string
	// OutDir receives the suite's results, one directory per scenario. It must be empty
	// or absent.
	OutDir string
	// Log receives the suite's console output; nil discards it.
	Log io.Writer
}

// Check is one check of a scenario, as the suite records it in checks.json.
type Check struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// Result is the outcome of one scenario. A scenario that produced no results has no
// checks and has not passed.
type Result struct {
	Scenario string
	Checks   []Check
}

// Passed reports whether the scenario produced checks and none failed or warned.
func (r Result) Passed() bool {
	return len(r.Checks) > 0 && r.Count(StatusFailure) == 0 && r.Count(StatusWarning) == 0
}

// Count is the number of checks with status.
func (r Result) Count(status string) int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == status {
			n++
		}
	}
	return n
}

// Problems are the messages of the checks that failed or warned.
func (r Result) Problems() []string {
	if len(r.Checks) == 0 {
		return []string{"no checks: the scenario did not run or reported nothing"}
	}
	var out []string
	for _, c := range r.Checks {
		if c.Status != StatusFailure && c.Status != StatusWarning {
			continue
		}
		msg := c.ErrorMessage
		if msg == "" {
			msg = c.Description
		}
		out = append(out, fmt.Sprintf("%s %s: %s", c.Status, c.Name, msg))
	}
	return out
}

// Run runs the suite against opts.URL and returns one result per scenario run, in the
// suite's order: every scenario when opts.Scenarios is empty. The suite's own exit status
// is not consulted; the results are read from opts.OutDir.
func (t Tools) Run(ctx context.Context, opts RunOptions) ([]Result, error) {
	if err := emptyDir(opts.OutDir); err != nil {
		return nil, err
	}
	scenarios := opts.Scenarios
	if len(scenarios) == 0 {
		var all []string
		var err error
		if opts.SpecVersion != "" {
			all, err = t.ScenariosFor(ctx, opts.SpecVersion)
		} else {
			all, err = t.Scenarios(ctx)
		}
		if err != nil {
			return nil, err
		}
		scenarios = all
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	for _, selector := range selectors(opts.Scenarios) {
		args := append([]string{t.CLI(), "server", "--url", opts.URL, "--output-dir", opts.OutDir}, selector...)
		if opts.SpecVersion != "" {
			args = append(args, "--spec-version", opts.SpecVersion)
		}
		cmd := t.command(ctx, args...)
		cmd.Stdout, cmd.Stderr = log, log
		// A non-zero exit only says that some scenario failed, which the results tell.
		if err := cmd.Run(); ctx.Err() != nil {
			return nil, fmt.Errorf("running the suite: %w", ctx.Err())
		} else if err != nil && !isExitError(err) {
			return nil, fmt.Errorf("running the suite: %w", err)
		}
	}
	return ReadResults(opts.OutDir, scenarios)
}

// selectors are the suite arguments of each run: the whole suite, pending scenarios
// included, or one run per scenario asked for.
func selectors(scenarios []string) [][]string {
	if len(scenarios) == 0 {
		return [][]string{{"--suite", "all"}}
	}
	out := make([][]string, len(scenarios))
	for i, s := range scenarios {
		out[i] = []string{"--scenario", s}
	}
	return out
}

func isExitError(err error) bool {
	var exit interface{ ExitCode() int }
	return errors.As(err, &exit)
}

// emptyDir creates dir, which must not exist or be empty.
func emptyDir(dir string) error {
	if dir == "" {
		return errors.New("conformance: no output directory")
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("output directory: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("output directory %s is not empty", dir)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	return nil
}

// resultDir matches the directories the suite writes: server-<scenario>-<timestamp>.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:-\d{3})?Z$`)

// ReadResults reads the checks.json of each scenario in scenarios from dir. Directories
// of other scenarios are an error, as is a scenario with two results.
func ReadResults(dir string, scenarios []string) ([]Result, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading results: %w", err)
	}
	checks := make(map[string][]Check, len(scenarios))
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		name := m[1]
		if !slices.Contains(scenarios, name) {
			return nil, fmt.Errorf("reading results: %s is not a scenario that was run", e.Name())
		}
		if _, dup := checks[name]; dup {
			return nil, fmt.Errorf("reading results: two results for %s", name)
		}
		if checks[name], err = readChecks(filepath.Join(dir, e.Name(), "checks.json")); err != nil {
			return nil, err
		}
	}
	results := make([]Result, len(scenarios))
	for i, s := range scenarios {
		results[i] = Result{Scenario: s, Checks: checks[s]}
	}
	return results, nil
}

func readChecks(path string) ([]Check, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading results: %w", err)
	}
	var checks []Check
	if err := json.Unmarshal(raw, &checks); err != nil {
		return nil, fmt.Errorf("reading results %s: %w", path, err)
	}
	for i, c := range checks {
		if !slices.Contains([]string{StatusSuccess, StatusFailure, StatusWarning, StatusInfo}, c.Status) {
			return nil, fmt.Errorf("reading results %s: check %d (%s) has status %q", path, i, c.ID, c.Status)
		}
	}
	return checks, nil
}
