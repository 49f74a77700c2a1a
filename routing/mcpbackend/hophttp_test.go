package mcpbackend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// hopRequest is one HTTP request an MCP server received: its JSON-RPC method ("GET" for
// an event stream, "" for a response the client posted) and Authorization header.
type hopRequest struct{ method, auth string }

// hopHTTPServer is an mcp-go server on loopback whose tool "whoami" answers with the
// Authorization header and the _meta of the request that carried the call, and which
// records every request it receives.
type hopHTTPServer struct {
	url  string
	mu   sync.Mutex
	seen []hopRequest
}

func (s *hopHTTPServer) requests() []hopRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hopRequest(nil), s.seen...)
}

type authHeaderKey struct{}

// whoami is what the server's tool saw.
type whoami struct {
	Authorization string         `json:"authorization"`
	Meta          map[string]any `json:"meta"`
}

// serveHopHTTP starts the server over streamable HTTP, or with sse over the legacy
// HTTP+SSE transport.
func serveHopHTTP(t *testing.T, sse bool) *hopHTTPServer {
	t.Helper()
	s := server.NewMCPServer("hop-http", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("whoami", mcp.WithString("tag")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		w := whoami{}
		w.Authorization, _ = ctx.Value(authHeaderKey{}).(string)
		if r.Params.Meta != nil {
			w.Meta = r.Params.Meta.AdditionalFields
		}
		out, err := json.Marshal(w)
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(string(out)), nil
	})
	withAuth := func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, authHeaderKey{}, r.Header.Get("Authorization"))
	}
	hs := httptest.NewUnstartedServer(nil)
	base := "http://" + hs.Listener.Addr().String()
	f := &hopHTTPServer{url: base + "/mcp"}
	var h http.Handler = server.NewStreamableHTTPServer(s, server.WithHTTPContextFunc(withAuth))
	if sse {
		h = server.NewSSEServer(s, server.WithBaseURL(base), server.WithSSEContextFunc(withAuth))
		f.url = base + "/sse"
	}
	hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := hopRequest{method: r.Method, auth: r.Header.Get("Authorization")}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var m struct{ Method string }
			_ = json.Unmarshal(body, &m)
			req.method = m.Method
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		f.mu.Lock()
		f.seen = append(f.seen, req)
		f.mu.Unlock()
		h.ServeHTTP(w, r)
	})
	hs.Start()
	t.Cleanup(hs.Close)
	return f
}

const staticAuth = "Bearer static-secret"

func TestHopCredentialOverHTTP(t *testing.T) {
	transports := []struct {
		name    string
		sse     bool
		version string
	}{
		{"streamable 2025-11-25", false, mcp.ProtocolVersion20251125},
		{"streamable 2026-07-28", false, mcp.ProtocolVersion20260728},
		{"sse", true, mcp.ProtocolVersion20251125},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			srv := serveHopHTTP(t, tr.sse)
			up := func(name, mode string) mcpbackend.Config {
				h := &mcpbackend.HTTPConfig{URL: srv.url, Headers: map[string]string{"Authorization": staticAuth, "X-Test": "1"}}
				c := fast(mcpbackend.Config{Name: name, DownstreamToken: gateway.DownstreamTokenConfig{Mode: mode}})
				if c.HTTP = h; tr.sse {
					c.HTTP, c.SSE = nil, h
				}
				c.ProtocolVersions = []string{tr.version}
				c.Heartbeat = mcpbackend.HeartbeatConfig{Interval: 30 * time.Second, Timeout: 5 * time.Second}
				return c
			}
			b, _ := start(t, []mcpbackend.Config{up("loud", ""), up("quiet", "none")})
			testHTTPHop(t, b, srv)
		})
	}
}

func testHTTPHop(t *testing.T, b *mcpbackend.Bridge, srv *hopHTTPServer) {
	ask := func(ctx context.Context, tool string) whoami {
		t.Helper()
		res, err := b.CallTool(ctx, tool, json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var w whoami
		if err := json.Unmarshal([]byte(firstText(t, res)), &w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	tests := []struct {
		name, tool, token, want string
	}{
		{"the hop token replaces the static header", "loud__whoami", "hop-1", "Bearer hop-1"},
		{"no token: the static header", "loud__whoami", "", staticAuth},
		{"mode none: the static header", "quiet__whoami", "hop-leak", staticAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := ask(withToken(t, tt.token), tt.tool)
			if w.Authorization != tt.want {
				t.Fatalf("the server saw Authorization %q, want %q", w.Authorization, tt.want)
			}
			if v, ok := w.Meta[mcpbackend.MetaKeyAuthorization]; ok {
				t.Fatalf("over HTTP the credential went into _meta too: %v", v)
			}
		})
	}
	t.Run("concurrent calls each carry their own", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				tok := "hop-c" + strconv.Itoa(i)
				res, err := b.CallTool(gateway.WithHopToken(context.Background(), tok), "loud__whoami", json.RawMessage(`{"tag":"`+tok+`"}`))
				if err != nil {
					t.Error(err)
					return
				}
				var w whoami
				if err := json.Unmarshal([]byte(firstTextOf(res)), &w); err != nil || w.Authorization != "Bearer "+tok {
					t.Errorf("call %d: the server saw %q, want %q", i, w.Authorization, "Bearer "+tok)
				}
			})
		}
		wg.Wait()
	})
	t.Run("the bridge's own requests carry the static header only", func(t *testing.T) {
		seen := map[string]int{}
		for _, r := range srv.requests() {
			seen[r.method]++
			if r.method != string(mcp.MethodToolsCall) && r.auth != staticAuth {
				t.Errorf("the bridge's own %q request carried Authorization %q", r.method, r.auth)
			}
		}
		if seen["tools/list"] == 0 || seen["initialize"]+seen["server/discover"] == 0 {
			t.Fatalf("the handshake and list requests were not recorded: %v", seen)
		}
		if want := len(tests) + 16; seen["tools/call"] != want {
			t.Fatalf("%d tools/call requests recorded, want %d", seen["tools/call"], want)
		}
	})
}
