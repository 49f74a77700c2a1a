package a2aclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/testproc"
)

// SDKVersion is the pinned @a2a-js/sdk; package.json pins the same (a test checks).
const SDKVersion = "1.3.0"

// DefaultToolsDir is where make a2a-client-tools installs the SDK, relative to the
// repository root.
const DefaultToolsDir = ".tmp/a2aclient"

// ErrNotInstalled reports that node or the pinned SDK is missing.
var ErrNotInstalled = errors.New("a2a client tools not installed (run make a2a-client-tools)")

// Tools is an installation: an npm prefix whose node_modules holds the SDK, with client.mjs
// copied beside it, run by the node on PATH (the SDK needs Node >= 20).
type Tools struct {
	// Dir is the npm prefix.
	Dir string
}

// Default returns the installation under the repository root that holds this file.
func Default() Tools {
	return Tools{Dir: filepath.Join(sourceDir(), "..", "..", DefaultToolsDir)}
}

// sourceDir is the directory of this file, where client.mjs is kept.
func sourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Check verifies that node runs and the pinned SDK is installed; the error wraps
// ErrNotInstalled when not.
func (t Tools) Check() error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("%w: node: %w", ErrNotInstalled, err)
	}
	if err := testproc.NPMInstalled(t.Dir, "@a2a-js/sdk", SDKVersion); err != nil {
		return fmt.Errorf("%w: %w", ErrNotInstalled, err)
	}
	return nil
}

func (t Tools) script() string { return filepath.Join(t.Dir, "client.mjs") }

// Step is one line client.mjs printed: its step name and fields.
type Step map[string]any

// Run runs client.mjs against the agent at base as the caller of token, with other as a
// second principal, and returns its steps by name; the error carries its stderr.
func (t Tools) Run(ctx context.Context, base, token, other string) (map[string]Step, error) {
	if err := t.install("client.mjs"); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "node", t.script(), base, token, other) //nolint:gosec // a test harness running the pinned script with the test's arguments
	cmd.Dir = t.Dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	steps := map[string]Step{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		var s Step
		if json.Unmarshal(sc.Bytes(), &s) == nil {
			if name, ok := s["step"].(string); ok {
				steps[name] = s
			}
		}
	}
	if err != nil {
		return steps, fmt.Errorf("client.mjs: %w\n%s", err, stderr.String())
	}
	return steps, nil
}

// Server is a running server.mjs: the reference A2A agent of the SDK.
type Server struct {
	// URL is its JSON-RPC endpoint.
	URL   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// StartServer starts server.mjs on loopback (the script of this checkout, copied beside
// the SDK) and returns once it listens. Stop it with Close.
func (t Tools) StartServer() (*Server, error) {
	s, err := t.start("server.mjs")
	if err != nil {
		return nil, err
	}
	s.URL += "/a2a"
	return s, nil
}

// StartUpstream starts upstream.mjs on loopback: an SDK agent with the skills echo,
// stream, fail and slow, run as an upstream behind the gateway. Its URL is its base (the
// card is at /.well-known/agent-card.json, what it saw at /seen). Stop it with Close.
func (t Tools) StartUpstream() (*Server, error) { return t.start("upstream.mjs") }

// start runs the script name (copied beside the SDK) and returns once it prints where
// it listens; URL is that base URL.
func (t Tools) start(name string) (*Server, error) {
	if err := t.install(name); err != nil {
		return nil, err
	}
	cmd := exec.Command("node", filepath.Join(t.Dir, name)) //nolint:gosec // the pinned script of the test's own tools dir
	cmd.Dir = t.Dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	var addr struct {
		URL string `json:"url"`
	}
	if err == nil && (json.Unmarshal(line, &addr) != nil || addr.URL == "") {
		err = errors.New("no url")
	}
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("%s did not say where it listens: %q, %w", name, line, err)
	}
	s.URL = addr.URL
	return s, nil
}

// Close stops the server: closing its stdin ends it; it is killed when it lingers.
func (s *Server) Close() error {
	_ = s.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		return <-done
	}
}

// install copies the script name of this checkout into the tools dir, beside the SDK it
// imports.
func (t Tools) install(name string) error {
	src, err := os.ReadFile(filepath.Join(sourceDir(), name))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(t.Dir, name), src, 0o600) //nolint:gosec // the test's own tools dir
}
