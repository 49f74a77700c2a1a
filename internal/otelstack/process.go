// Package otelstack runs a real Jaeger v2 and a real Prometheus on loopback for the tests of
// Gatehouse's tracing and metrics, and reads back what they received through their query APIs.
// `make observability-tools` installs both; a missing binary fails the test under CI (CI set)
// and skips it elsewhere.
package otelstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/mcptest"
)

const (
	// startTimeout bounds how long a process may take to become ready.
	startTimeout = 30 * time.Second
	// stopTimeout bounds how long a process may take to exit after SIGTERM before it is killed.
	stopTimeout = 10 * time.Second
	// startAttempts is how often a process is started again when it exits before it is ready,
	// which happens when another process took one of its free ports in the meantime.
	startAttempts = 3
	pollInterval  = 50 * time.Millisecond
)

// errExited reports a process that exited before it became ready.
var errExited = errors.New("process exited before it was ready")

// process is one running program whose output goes to a log file.
type process struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startProcess starts bin with args, its output written to a log file in dir.
func startProcess(dir, bin string, args ...string) (*process, error) {
	logPath := filepath.Join(dir, filepath.Base(bin)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating log: %w", err)
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(bin, args...) //nolint:gosec // a binary the harness located, with arguments it wrote
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &process{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // the exit status stays in cmd.ProcessState
		close(p.done)
	}()
	return p, nil
}

// stop ends the process with SIGTERM, then SIGKILL after stopTimeout, and reaps it.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail returns the last lines of the process's log, for error messages.
func (p *process) tail() string {
	const limit = 4000
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	if len(b) > limit {
		b = b[len(b)-limit:]
	}
	return string(b)
}

// waitReady polls url until it answers 200, the process exits, or startTimeout passes.
func (p *process) waitReady(client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		if statusOK(ctx, client, url) {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%w (%s)\n%s", errExited, p.cmd.ProcessState, p.tail())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v\n%s", url, startTimeout, p.tail())
		case <-ticker.C:
		}
	}
}

// statusOK reports whether a GET of url answers 200.
func statusOK(ctx context.Context, client *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// start runs launch until the process it starts becomes ready, at most startAttempts times
// when it exits early, and stops the process at the end of the test.
func start(t testing.TB, launch func() (*process, error)) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p, err := launch()
		if err == nil {
			t.Cleanup(p.stop)
			return
		}
		if !errors.Is(err, errExited) || attempt == startAttempts {
			t.Fatal(err)
		}
		t.Logf("attempt %d: %v", attempt, err)
	}
}

// freePorts returns n distinct loopback addresses (127.0.0.1:port) that were free a moment ago.
func freePorts(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer func() { _ = l.Close() }()
		addrs = append(addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Addr().(*net.TCPAddr).Port)))
	}
	return addrs, nil
}

// binary returns env's value, or the first of candidates that exists. A missing binary fails
// the test under CI and skips it elsewhere.
func binary(t testing.TB, name, env string, candidates ...string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		candidates = []string{p}
	}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%s is not installed (looked for %v): run `make observability-tools` or set %s", name, candidates, env)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// repoTool returns the path of a tool under the repository's .tmp/bin.
func repoTool(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(mcptest.RepoRoot(t), ".tmp", "bin", name)
}

// newClient returns an HTTP client of its own, whose idle connections are closed at the end of the test.
func newClient(t testing.TB) *http.Client {
	t.Helper()
	transport := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport, Timeout: 10 * time.Second}
}
