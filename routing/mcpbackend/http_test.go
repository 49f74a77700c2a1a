package mcpbackend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// sessionTable is a session-ID manager whose sessions the test can forget, as a server
// does after a restart or an idle timeout.
type sessionTable struct {
	mu        sync.Mutex
	valid     map[string]bool
	generated int
}

func (s *sessionTable) Generate() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.generated++
	id := "session-" + strconv.Itoa(s.generated)
	s.valid[id] = true
	return id
}

func (s *sessionTable) Validate(id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.valid[id] {
		return false, errors.New("unknown session")
	}
	return false, nil
}

func (s *sessionTable) Terminate(id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.valid, id)
	return false, nil
}

func (s *sessionTable) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.valid)
}

func (s *sessionTable) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.generated
}

// httpFixture is an mcp-go streamable HTTP server on loopback; posted records the
// JSON-RPC methods clients POST.
type httpFixture struct {
	url      string
	sessions *sessionTable
	mu       sync.Mutex
	posted   []string
}

func (f *httpFixture) methods() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.posted, " ")
}

func serveHTTPFixture(t *testing.T) *httpFixture {
	t.Helper()
	s := server.NewMCPServer("http-fixture", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("message")), func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(r.GetString("message", "")), nil
	})
	s.AddTool(mcp.NewTool("slow"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-time.After(20 * time.Second):
			return mcp.NewToolResultText("slept"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	f := &httpFixture{sessions: &sessionTable{valid: map[string]bool{}}}
	h := server.NewStreamableHTTPServer(s, server.WithSessionIdManager(f.sessions))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var m struct{ Method string }
			if json.Unmarshal(body, &m) == nil {
				f.mu.Lock()
				f.posted = append(f.posted, m.Method)
				f.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	f.url = hs.URL + "/mcp"
	return f
}

func httpUpstream(url string) mcpbackend.Config {
	c := fast(mcpbackend.Config{Name: "remote", HTTP: &mcpbackend.HTTPConfig{URL: url, Headers: map[string]string{"X-Test": "1"}}})
	c.ProtocolVersions = []string{mcp.ProtocolVersion20251125} // sessions exist before 2026-07-28
	c.Heartbeat = mcpbackend.HeartbeatConfig{Interval: 30 * time.Second, Timeout: 5 * time.Second}
	return c
}

func TestHTTPSessionExpiryReinitialises(t *testing.T) {
	f := serveHTTPFixture(t)
	b, logs := start(t, []mcpbackend.Config{httpUpstream(f.url)})
	if got := callText(t, b, "echo", `{"message":"one"}`); got != "one" {
		t.Fatalf("echo = %q", got)
	}
	if n := f.sessions.count(); n != 1 {
		t.Fatalf("%d sessions before expiry", n)
	}
	f.sessions.forget()
	if got := callText(t, b, "echo", `{"message":"two"}`); got != "two" {
		t.Fatalf("echo after expiry = %q", got)
	}
	if n := f.sessions.count(); n != 2 {
		t.Fatalf("%d sessions after expiry, want 2", n)
	}
	if !strings.Contains(logs.String(), "MCP session expired") {
		t.Fatalf("expiry not logged:\n%s", logs)
	}
	if got := callText(t, b, "echo", `{"message":"three"}`); got != "three" {
		t.Fatalf("echo on the new session = %q", got)
	}
}

func TestHTTPCancellationNotified(t *testing.T) {
	f := serveHTTPFixture(t)
	b, _ := start(t, []mcpbackend.Config{httpUpstream(f.url)})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := b.CallTool(ctx, "slow", nil)
	if codeOf(err) != schemas.CodeDeadlineExceeded {
		t.Fatalf("slow: %v", err)
	}
	waitFor(t, 5*time.Second, "notifications/cancelled to be posted", func() bool {
		return strings.Contains(f.methods(), "notifications/cancelled")
	})
}
