package mcpbackend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// fixtureBin is the mcp-go fixture server, built once by TestMain.
var fixtureBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpbackend-fixture")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fixtureBin = filepath.Join(dir, "fixture")
	out, err := exec.Command("go", "build", "-o", fixtureBin, "./testdata/fixture").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the fixture server: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// npmServer returns the path of an installed npm MCP server's binary (make mcp-servers).
// Missing servers fail the test under CI and skip it elsewhere.
func npmServer(t testing.TB, bin string) string {
	t.Helper()
	dir := os.Getenv("MCP_SERVERS_BIN")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), ".tmp", "npm", "node_modules", ".bin")
	}
	p := filepath.Join(dir, bin)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("MCP server %s is not installed in %s (run make mcp-servers): %v", bin, dir, err)
		}
		t.Skipf("MCP server %s is not installed in %s: run `make mcp-servers` (or set MCP_SERVERS_BIN)", bin, dir)
	}
	return p
}

func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// fast is supervision tuned for tests.
func fast(c mcpbackend.Config) mcpbackend.Config {
	c.Heartbeat = mcpbackend.HeartbeatConfig{Interval: 600 * time.Millisecond, Timeout: 200 * time.Millisecond}
	c.Restart = mcpbackend.BackoffConfig{Initial: 50 * time.Millisecond, Max: 400 * time.Millisecond, Jitter: 0.2}
	c.ConnectTimeout = 20 * time.Second
	if c.Stdio != nil {
		c.Stdio.StopGrace = 500 * time.Millisecond
	}
	return c
}

// fixture is an upstream running the fixture server over stdio.
func fixture(name string, env map[string]string) mcpbackend.Config {
	env = maps.Clone(env)
	if env == nil {
		env = map[string]string{}
	}
	env["FIXTURE_NAME"] = name
	return fast(mcpbackend.Config{Name: name, Stdio: &mcpbackend.StdioConfig{Command: fixtureBin, Env: env}})
}

// logBuffer collects log records as text.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// start runs a bridge over cfgs and waits until it is ready.
func start(t testing.TB, cfgs []mcpbackend.Config, opts ...mcpbackend.Option) (*mcpbackend.Bridge, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b, err := mcpbackend.New(cfgs, log, time.Now, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	select {
	case <-b.Loaded():
	case <-time.After(30 * time.Second):
		t.Fatalf("catalogs not loaded: %v\n%s", b.Ready(context.Background()), logs)
	}
	return b, logs
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// callText calls a tool and returns the text of its first content item.
func callText(t testing.TB, b *mcpbackend.Bridge, tool string, args string) string {
	t.Helper()
	res, err := b.CallTool(ctxTimeout(t, 10*time.Second), tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return firstText(t, res)
}

func firstText(t testing.TB, res json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct {
			Type, Text string
		}
		IsError bool
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("result %s: %v", res, err)
	}
	return r.Content[0].Text
}

// codeOf returns the gateway error code of err.
func codeOf(err error) schemas.Code {
	if ge, ok := errors.AsType[*gateway.Error](err); ok {
		return ge.Code()
	}
	return 0
}

// names returns the exposed names of entries.
func names(es []mcpbackend.Entry) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Name)
	}
	return out
}

func hasName(es []mcpbackend.Entry, name string) bool {
	for _, e := range es {
		if e.Name == name {
			return true
		}
	}
	return false
}

func entry(t testing.TB, es []mcpbackend.Entry, name string) mcpbackend.Entry {
	t.Helper()
	for _, e := range es {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %q in %s", name, strings.Join(names(es), ", "))
	return mcpbackend.Entry{}
}

// nonBlocking sends e unless ch is full: a listener must never block the bridge.
func nonBlocking(ch chan mcpbackend.Event, e mcpbackend.Event) {
	select {
	case ch <- e:
	default:
	}
}
