package mcpbackend_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// countingUpstream is a streamable HTTP MCP server on loopback that counts the TCP
// connections it accepted.
func countingUpstream(t *testing.T) (url string, accepted *atomic.Int64) {
	t.Helper()
	s := server.NewMCPServer("conns", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("message")), func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(r.GetString("message", "")), nil
	})
	h := server.NewStreamableHTTPServer(s)
	accepted = &atomic.Int64{}
	hs := httptest.NewUnstartedServer(h)
	hs.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			accepted.Add(1)
		}
	}
	hs.Start()
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs.URL + "/mcp", accepted
}

// callConcurrently makes rounds of concurrency simultaneous tool calls.
func callConcurrently(t *testing.T, b *mcpbackend.Bridge, concurrency, rounds int) {
	t.Helper()
	args := json.RawMessage(`{"message":"ping"}`)
	for range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, concurrency)
		for range concurrency {
			wg.Go(func() {
				if _, err := b.CallTool(ctxTimeout(t, 10*time.Second), "echo", args); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
}

// TestHTTPUpstreamReusesConnections: 32 concurrent calls, round after round, reuse the
// connections of the first rounds (http.DefaultTransport's two idle connections per host
// made nearly every call dial). With max_idle_conns 1 (its lower edge) they do not.
func TestHTTPUpstreamReusesConnections(t *testing.T) {
	const concurrency, rounds = 32, 20
	// The handshake, the standalone GET stream and a few dialled while others were
	// being returned to the pool.
	const margin = 8
	for _, tt := range []struct {
		name       string
		idle       int
		reuses     bool
		wantAtMost int64
	}{
		{"default", 0, true, concurrency + margin},
		{"one idle", 1, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, accepted := countingUpstream(t)
			cfg := httpUpstream(url)
			cfg.HTTP.MaxIdleConns = tt.idle
			b, _ := start(t, []mcpbackend.Config{cfg})
			callConcurrently(t, b, concurrency, rounds)
			n := accepted.Load()
			t.Logf("max_idle_conns %d: %d connections for %d calls", tt.idle, n, concurrency*rounds)
			if tt.reuses && n > tt.wantAtMost {
				t.Fatalf("the upstream accepted %d connections for %d calls at concurrency %d, want at most %d", n, concurrency*rounds, concurrency, tt.wantAtMost)
			}
			if !tt.reuses && n <= concurrency+margin {
				t.Fatalf("max_idle_conns 1: only %d connections for %d calls; is the knob applied?", n, concurrency*rounds)
			}
		})
	}
}
