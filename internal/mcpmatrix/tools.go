package mcpmatrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/testproc"
)

// DefaultToolsDir is where make mcpmatrix-tools installs the Node peers, relative to the
// repository root.
const DefaultToolsDir = ".tmp/mcpmatrix"

// ErrNotInstalled reports that the Node peers are missing or are not the pinned versions.
var ErrNotInstalled = errors.New("MCP matrix peers not installed (run make mcpmatrix-tools)")

// probeTimeout bounds the node version probe.
const probeTimeout = 30 * time.Second

// Pins are the dependencies package.json pins: package name → exact version.
type Pins map[string]string

// ReadPins reads the dependencies of a package.json.
func ReadPins(path string) (Pins, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pkg struct {
		Dependencies Pins `json:"dependencies"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(pkg.Dependencies) == 0 {
		return nil, fmt.Errorf("%s: no dependencies", path)
	}
	return pkg.Dependencies, nil
}

// Tools is an installation of the pinned peers: an npm prefix whose node_modules holds
// every package of the pins, node among them.
type Tools struct {
	// Dir is the npm prefix.
	Dir string
}

// Node is the path of the pinned node binary.
func (t Tools) Node() string { return filepath.Join(t.Dir, "node_modules", "node", "bin", "node") }

// Check verifies that every pinned package is installed at its pinned version and that
// node runs and is that version. The error wraps ErrNotInstalled when they are not.
func (t Tools) Check(ctx context.Context, pins Pins) error {
	for name, version := range pins {
		if err := testproc.NPMInstalled(t.Dir, name, version); err != nil {
			return fmt.Errorf("%w: %w", ErrNotInstalled, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	out, err := t.Command(ctx, "--version").Output()
	if err != nil {
		return fmt.Errorf("%w: node: %w", ErrNotInstalled, err)
	}
	if got, want := strings.TrimSpace(string(out)), "v"+pins["node"]; got != want {
		return fmt.Errorf("%w: node is %s, want %s", ErrNotInstalled, got, want)
	}
	return nil
}

// Command is the pinned node with args, resolving require() from the installation's
// node_modules (NODE_PATH), so that scripts kept in the repository find the pinned
// packages.
func (t Tools) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, t.Node(), args...) //nolint:gosec // the pinned node, running the harness's own scripts
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(t.Dir, "node_modules"))
	cmd.WaitDelay = 2 * time.Second
	return cmd
}
