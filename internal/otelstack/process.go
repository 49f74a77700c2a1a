// Package otelstack runs a real Jaeger v2 and a real Prometheus on loopback for the tests of
// Gatehouse's tracing and metrics, and reads back what they received through their query APIs.
// `make observability-tools` installs both; a missing binary fails the test under CI (CI set)
// and skips it elsewhere. Both run through internal/testproc, and end with SIGTERM to the
// process (SIGKILL to its group after 10 s) at the end of the test.
package otelstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/mcptest"
	"github.com/gatehouse-dev/gatehouse/internal/testproc"
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

// startProcess starts bin with args in dir, its output written to <binary name>.log there.
func startProcess(dir, bin string, args ...string) (*testproc.Process, error) {
	return testproc.Start(dir, bin, filepath.Base(bin)+".log", args...)
}

// stop ends p with SIGTERM, then SIGKILL after stopTimeout, and reaps it.
func stop(p *testproc.Process) { p.Stop(stopTimeout) }

// waitReady polls url until it answers 200, p exits (an error wrapping testproc.ErrExited),
// or startTimeout passes.
func waitReady(p *testproc.Process, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	err := p.WaitReady(ctx, pollInterval, func(ctx context.Context) error { return statusOK(ctx, client, url) })
	if err != nil && !errors.Is(err, testproc.ErrExited) {
		return fmt.Errorf("%s not ready after %v: %w", url, startTimeout, err)
	}
	return err
}

// statusOK checks that a GET of url answers 200.
func statusOK(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %s", url, resp.Status)
	}
	return nil
}

// start runs launch until the process it starts becomes ready, at most startAttempts times
// when it exits early, and stops the process at the end of the test.
func start(t testing.TB, launch func() (*testproc.Process, error)) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p, err := launch()
		if err == nil {
			t.Cleanup(func() { stop(p) })
			return
		}
		if !errors.Is(err, testproc.ErrExited) || attempt == startAttempts {
			t.Fatal(err)
		}
		t.Logf("attempt %d: %v", attempt, err)
	}
}

// binary returns env's value, or the first of candidates that exists. A missing binary fails
// the test under CI and skips it elsewhere.
func binary(t testing.TB, name, env string, candidates ...string) string {
	t.Helper()
	return testproc.Lookup(t, name, env, "run `make observability-tools`", candidates...)
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
