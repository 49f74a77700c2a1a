package conformance

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// The pinned versions; package.json beside this file pins the same ones (a test checks).
const (
	SuiteVersion = demo.SuiteVersion
	NodeVersion  = "22.23.3"
)

// DefaultToolsDir is where make conformance-tools installs the tools, relative to the
// repository root.
const DefaultToolsDir = ".tmp/conformance"

// ErrNotInstalled reports that the tools are missing or are not the pinned versions.
var ErrNotInstalled = errors.New("conformance tools not installed (run make conformance-tools)")

// probeTimeout bounds each version and listing command.
const probeTimeout = 30 * time.Second

// Tools is an installation of the pinned suite and Node: an npm prefix whose
// node_modules holds the node@NodeVersion and @modelcontextprotocol/conformance packages.
type Tools struct {
	// Dir is the npm prefix.
	Dir string
}

// Node is the path of the pinned node binary.
func (t Tools) Node() string { return filepath.Join(t.Dir, "node_modules", "node", "bin", "node") }

// CLI is the path of the suite's entry point.
func (t Tools) CLI() string {
	return filepath.Join(t.Dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
}

// Check verifies that node and the suite are installed at the pinned versions. The error
// wraps ErrNotInstalled when they are not.
func (t Tools) Check(ctx context.Context) error {
	nodeVersion, err := t.output(ctx, "--version")
	if err != nil {
		return fmt.Errorf("%w: node: %w", ErrNotInstalled, err)
	}
	if nodeVersion != "v"+NodeVersion {
		return fmt.Errorf("%w: node is %s, want v%s", ErrNotInstalled, nodeVersion, NodeVersion)
	}
	suiteVersion, err := t.output(ctx, t.CLI(), "--version")
	if err != nil {
		return fmt.Errorf("%w: suite: %w", ErrNotInstalled, err)
	}
	if suiteVersion != SuiteVersion {
		return fmt.Errorf("%w: suite is %s, want %s", ErrNotInstalled, suiteVersion, SuiteVersion)
	}
	return nil
}

// Scenarios lists the suite's server scenarios, pending ones included.
func (t Tools) Scenarios(ctx context.Context) ([]string, error) {
	out, err := t.output(ctx, t.CLI(), "list", "--server")
	if err != nil {
		return nil, fmt.Errorf("listing scenarios: %w", err)
	}
	var names []string
	scanner := bufio.NewScanner(strings.NewReader(out))
	for scanner.Scan() {
		line, ok := strings.CutPrefix(strings.TrimSpace(scanner.Text()), "- ")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("listing scenarios: none in %q", out)
	}
	return names, nil
}

// output runs node with args and returns its trimmed standard output.
func (t Tools) output(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var stderr bytes.Buffer
	cmd := t.command(ctx, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", t.Node(), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// command is node with args, the pinned node first on PATH for anything it spawns.
func (t Tools) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, t.Node(), args...) //nolint:gosec // the pinned node, running the harness's own arguments
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(t.Node())+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.WaitDelay = time.Second
	return cmd
}
