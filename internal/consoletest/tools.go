package consoletest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/testproc"
)

// PlaywrightVersion is the pinned playwright-core; package.json pins the same (a test
// checks).
const PlaywrightVersion = "1.65.1"

// DefaultToolsDir is where make console-tools installs playwright-core, relative to the
// repository root.
const DefaultToolsDir = ".tmp/consoletest"

// DefaultChromium is Debian's Chromium; CONSOLE_CHROMIUM names another.
const DefaultChromium = "/usr/bin/chromium"

// ErrNotInstalled reports that node, Chromium or the pinned playwright-core is missing.
var ErrNotInstalled = errors.New("console test tools not installed (run make console-tools)")

// Tools is an installation: an npm prefix whose node_modules holds playwright-core, with
// console.mjs copied beside it, and the Chromium it drives.
type Tools struct {
	// Dir is the npm prefix.
	Dir string
	// Chromium is the browser binary.
	Chromium string
}

// Default returns the installation under the repository root that holds this file, with
// CONSOLE_CHROMIUM or Debian's Chromium.
func Default() Tools {
	chromium := os.Getenv("CONSOLE_CHROMIUM")
	if chromium == "" {
		chromium = DefaultChromium
	}
	return Tools{Dir: filepath.Join(sourceDir(), "..", "..", DefaultToolsDir), Chromium: chromium}
}

// sourceDir is the directory of this file, where console.mjs is kept.
func sourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Check verifies that node and Chromium run and the pinned playwright-core is installed;
// the error wraps ErrNotInstalled when not.
func (t Tools) Check() error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("%w: node: %w", ErrNotInstalled, err)
	}
	if _, err := exec.LookPath(t.Chromium); err != nil {
		return fmt.Errorf("%w: chromium: %w", ErrNotInstalled, err)
	}
	if err := testproc.NPMInstalled(t.Dir, "playwright-core", PlaywrightVersion); err != nil {
		return fmt.Errorf("%w: %w", ErrNotInstalled, err)
	}
	return nil
}

// Params are what one run of console.mjs acts on.
type Params struct {
	// URL is the admin listener's base URL; Key an operator's API key.
	URL, Key string
	// Task and Approval are the ids of the running task to cancel and the pending approval
	// to approve.
	Task, Approval string
	// Shots is the directory the screenshots are written to.
	Shots string
}

// Result is what console.mjs reports: what the page showed, and every problem it met (a
// failed step, a script error, a Content-Security-Policy violation, a request to another
// origin).
type Result struct {
	Shown    map[string]any `json:"shown"`
	Problems []string       `json:"problems"`
}

// Run runs console.mjs (the script of this checkout, copied beside playwright-core) with p
// and returns its result; the error carries its stderr.
func (t Tools) Run(ctx context.Context, p Params) (Result, error) {
	src, err := os.ReadFile(filepath.Join(sourceDir(), "console.mjs"))
	if err != nil {
		return Result{}, err
	}
	// a name of this run's own, so that concurrent runs from other checkouts sharing the
	// tools dir do not overwrite it
	script := filepath.Join(t.Dir, fmt.Sprintf("console-%d.mjs", os.Getpid()))
	if err := os.WriteFile(script, src, 0o600); err != nil { //nolint:gosec // the test's own tools dir
		return Result{}, err
	}
	defer func() { _ = os.Remove(script) }()
	cmd := exec.CommandContext(ctx, "node", script) //nolint:gosec // a test harness running the pinned script
	cmd.Dir = t.Dir
	cmd.Env = append(os.Environ(), "CONSOLE_URL="+p.URL, "CONSOLE_KEY="+p.Key, "CONSOLE_TASK="+p.Task,
		"CONSOLE_APPROVAL="+p.Approval, "CONSOLE_SHOTS="+p.Shots, "CONSOLE_CHROMIUM="+t.Chromium)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var r Result
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("console.mjs: %w (%w)\nstdout: %s\nstderr: %s", runErr, err, out, stderr.String())
	}
	if runErr != nil {
		return r, fmt.Errorf("console.mjs: %w\nproblems: %s\nstderr: %s", runErr, strings.Join(r.Problems, "\n"), stderr.String())
	}
	return r, nil
}
