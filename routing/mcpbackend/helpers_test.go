package mcpbackend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/mcptest"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// fixtureBin is the mcp-go fixture server, built once by TestMain.
var fixtureBin string

func TestMain(m *testing.M) { mcptest.Main(m, "testdata/fixture", &fixtureBin) }

// npmServer returns the path of an installed npm MCP server's binary (make mcp-servers).
func npmServer(t testing.TB, bin string) string { return mcptest.NPMServer(t, bin) }

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
