package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.VerifyMain(m) // goleak, patient with mcp-go's asynchronously stopped goroutines
}

// baseConfig is the configuration tests start from; listeners take free loopback ports.
const baseConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
websocket: {}
auth:
  anonymous: {}
routing:
  demo: {}
log: {level: debug}
`

// testServer is a running in-process server.
type testServer struct {
	*Server
	t      *testing.T
	base   string // http://host:port of the boundary
	admin  string
	cancel context.CancelFunc
	done   chan error
	logs   *syncBuffer
	// a2aPlainOK lets a2aEvents return a plain response as its one "event" (a2a_test.go).
	a2aPlainOK bool
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start parses yaml (on top of nothing: pass a whole file), starts a server and stops it
// when the test ends.
func start(t *testing.T, yaml string, targets map[string]gateway.Target) *testServer {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return startConfig(t, cfg, targets)
}

func startConfig(t *testing.T, cfg *Config, targets map[string]gateway.Target) *testServer {
	t.Helper()
	level := new(slog.LevelVar)
	return startOptions(t, cfg, Options{LogLevel: level, Targets: targets}, level)
}

// startOptions starts cfg with opts, logging at level (nil: debug) into the test's log
// buffer, and waits until the server is ready.
func startOptions(t *testing.T, cfg *Config, opts Options, level slog.Leveler) *testServer {
	t.Helper()
	if level == nil {
		level = slog.LevelDebug
	}
	logs := &syncBuffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))
	srv, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{Server: srv, t: t, base: "http://" + srv.BoundaryAddr().String(), admin: "http://" + srv.AdminAddr().String(),
		cancel: cancel, done: make(chan error, 1), logs: logs}
	go func() { ts.done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		if err := ts.stop(); err != nil {
			t.Errorf("server stopped with %v", err)
			if strings.Contains(err.Error(), "did not finish") {
				var dump strings.Builder
				_ = pprof.Lookup("goroutine").WriteTo(&dump, 1) // what the shutdown waited for
				t.Logf("goroutines:\n%s", dump.String())
			}
		}
		if t.Failed() {
			t.Logf("server logs:\n%s", logs.String())
		}
	})
	ts.waitReady()
	return ts
}

// stop shuts the server down (idempotent) and returns Run's result.
func (ts *testServer) stop() error {
	ts.cancel()
	select {
	case err, ok := <-ts.done:
		if ok {
			close(ts.done)
		}
		return err
	case <-time.After(30 * time.Second):
		return io.ErrNoProgress
	}
}

func (ts *testServer) waitReady() { ts.waitReadyWithin(5 * time.Second) }

// waitReadyWithin waits up to d for /readyz to answer 200 (backends loading descriptors
// or catalogs may take longer than the default).
func (ts *testServer) waitReadyWithin(d time.Duration) {
	ts.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		resp, err := http.Get(ts.admin + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	ts.t.Fatal("server did not become ready")
}

// post sends body to /rpc and returns the status, headers and body.
func (ts *testServer) post(body string, header ...string) (int, http.Header, string) {
	ts.t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.base+"/rpc", strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// rpcError is the error member of a decoded response.
type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

// response is one decoded JSON-RPC response.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
	ID      json.RawMessage `json:"id"`
}

func decodeOne(t *testing.T, body string) response {
	t.Helper()
	var r response
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("response %q: %v", body, err)
	}
	return r
}

func decodeMany(t *testing.T, body string) []response {
	t.Helper()
	var rs []response
	if err := json.Unmarshal([]byte(body), &rs); err != nil {
		t.Fatalf("response %q: %v", body, err)
	}
	return rs
}

// writeFile writes a file in a test's temporary directory and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func renameFile(from, to string) error { return os.Rename(from, to) }

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
