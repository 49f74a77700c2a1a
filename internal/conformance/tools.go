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
	"regexp"
	"slices"
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
	entries, err := t.list(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return names, nil
}

// ScenariosFor lists the server scenarios the suite runs for a protocol version
// (`--spec-version`, cumulative for date versions), pending ones included.
func (t Tools) ScenariosFor(ctx context.Context, specVersion string) ([]string, error) {
	entries, err := t.list(ctx, "--spec-version", specVersion)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return names, nil
}

// SpecVersions lists the protocol versions (dates) the suite's server scenarios cover,
// oldest first.
func (t Tools) SpecVersions(ctx context.Context) ([]string, error) {
	entries, err := t.list(ctx)
	if err != nil {
		return nil, err
	}
	var versions []string
	for _, e := range entries {
		for _, v := range e.Tags {
			if specVersion.MatchString(v) && !slices.Contains(versions, v) {
				versions = append(versions, v)
			}
		}
	}
	slices.Sort(versions)
	return versions, nil
}

// specVersion is a protocol version as the suite tags scenarios with it (a date; the
// suite has other tags, such as "extension").
var specVersion = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// ScenarioEntry is one line of `list --server`: "- name [tag,tag]".
type ScenarioEntry struct {
	// Name is the scenario's name.
	Name string
	// Tags are the protocol versions it applies to, or other tags ("extension").
	Tags []string
}

// list runs `list --server` with extra arguments and parses its lines.
func (t Tools) list(ctx context.Context, extra ...string) ([]ScenarioEntry, error) {
	out, err := t.output(ctx, append([]string{t.CLI(), "list", "--server"}, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("listing scenarios: %w", err)
	}
	entries := ParseScenarioList(out)
	if len(entries) == 0 {
		return nil, fmt.Errorf("listing scenarios: none in %q", out)
	}
	return entries, nil
}

// ParseScenarioList parses the output of `list --server`: the lines "- name [tags]".
func ParseScenarioList(out string) []ScenarioEntry {
	var entries []ScenarioEntry
	scanner := bufio.NewScanner(strings.NewReader(out))
	for scanner.Scan() {
		line, ok := strings.CutPrefix(strings.TrimSpace(scanner.Text()), "- ")
		if !ok {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		e := ScenarioEntry{Name: name}
		if tags, ok := strings.CutPrefix(strings.TrimSpace(rest), "["); ok {
			tags, _, _ = strings.Cut(tags, "]")
			for tag := range strings.SplitSeq(tags, ",") {
				if tag = strings.TrimSpace(tag); tag != "" {
					e.Tags = append(e.Tags, tag)
				}
			}
		}
		entries = append(entries, e)
	}
	return entries
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
