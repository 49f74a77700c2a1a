package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/internal/redistest"
)

// versionedUpstream is the conformance fixture (demo.MCP: tools with progress, resources,
// prompts) over streamable HTTP, stateful, with "whoami" (the upstream session id),
// "remember" and "recall" (a value kept per upstream session) added. With legacyOnly it
// answers server/discover as a server before 2026-07-28 does (method not found), so it is
// reached with initialize and keeps sessions; otherwise it speaks 2026-07-28 too. It
// records the MCP-Protocol-Version of every tools/call and the sessions DELETEd.
type versionedUpstream struct {
	url string

	mu       sync.Mutex
	memory   map[string]string
	versions []string // MCP-Protocol-Version of each tools/call
	deletes  []string
}

func (u *versionedUpstream) callVersions() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.versions)
}

func (u *versionedUpstream) deleted() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.deletes)
}

func serveVersioned(t *testing.T, legacyOnly bool) *versionedUpstream {
	t.Helper()
	u := &versionedUpstream{memory: map[string]string{}}
	m := demo.NewMCP(demo.MCPOptions{StepDelay: 5 * time.Millisecond})
	sid := func(ctx context.Context) string {
		if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil {
			return cs.SessionID()
		}
		return ""
	}
	m.MCPServer().AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(sid(ctx)), nil
	})
	m.MCPServer().AddTool(mcp.NewTool("remember", mcp.WithString("value")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.mu.Lock()
		u.memory[sid(ctx)] = r.GetString("value", "")
		u.mu.Unlock()
		return mcp.NewToolResultText("ok"), nil
	})
	m.MCPServer().AddTool(mcp.NewTool("recall"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.mu.Lock()
		defer u.mu.Unlock()
		return mcp.NewToolResultText(u.memory[sid(ctx)]), nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ReadHeaderTimeout: testTimeout}
	h := m.StreamableHTTPHandler(mcpserver.WithStreamableHTTPServer(hs))
	hs.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodDelete:
			u.mu.Lock()
			u.deletes = append(u.deletes, r.Header.Get("Mcp-Session-Id"))
			u.mu.Unlock()
		case http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal(body, &msg)
			if legacyOnly && msg.Method == string(mcp.MethodServerDiscover) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"error":{"code":-32601,"message":"Method not found"}}`))
				return
			}
			if msg.Method == string(mcp.MethodToolsCall) {
				u.mu.Lock()
				u.versions = append(u.versions, r.Header.Get("Mcp-Protocol-Version"))
				u.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	})
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("upstream shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("upstream: %v", err)
		}
	})
	u.url = "http://" + ln.Addr().String() + "/mcp"
	return u
}

// affinityConfig is a gateway with API keys alice and bob, and the development token
// issuer, serving the MCP face in front of
// the upstream at url, with extra keys for the upstream.
func affinityConfig(url, upstream string) string {
	jwks, err := filepath.Abs("../configs/examples/dev-jwks.json")
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf(`server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  api_keys:
    - {name: alice, hash: %q}
    - {name: bob, hash: %q}
  jwt:
    issuers:
      - {issuer: gatehouse-dev, audiences: [gatehouse], jwks_file: %q}
mcp_face: {session_key: %q}
log: {level: debug}
routing:
  mcp:
    servers:
      - name: st
        http: {url: %q}
        %s
`, apiKeyHash("alice-key"), apiKeyHash("bob-key"), jwks, testSessionKey, url, upstream)
}

// faceClient connects an mcp-go client to a gateway's /mcp as the API key's holder; version
// empty lets it negotiate (2026-07-28), else it is pinned (a handshake revision).
func faceClient(t *testing.T, base, key, version string) *client.Client {
	t.Helper()
	return faceClientWith(t, base, map[string]string{"X-API-Key": key}, version)
}

// faceClientWith is faceClient with the credential headers given.
func faceClientWith(t *testing.T, base string, headers map[string]string, version string) *client.Client {
	t.Helper()
	var opts []client.ClientOption
	if version != "" {
		opts = append(opts, client.WithProtocolVersion(version))
	}
	tr, err := transport.NewStreamableHTTP(base+"/mcp", transport.WithHTTPBasicClient(httpClient(t)),
		transport.WithHTTPHeaders(headers), transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, opts...)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "affinity-test", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	want := version
	if want == "" {
		want = mcp.ProtocolVersion20260728
	}
	if res.ProtocolVersion != want {
		t.Fatalf("the face negotiated %s, want %s", res.ProtocolVersion, want)
	}
	return c
}

// affToolText calls a tool and returns its first text.
func affToolText(t *testing.T, c *client.Client, name string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("%s: %+v, %v", name, res, err)
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content %T", name, res.Content[0])
	}
	return text.Text
}

// TestMCPAffinityAcrossReplicas: a stateless 2026-07-28 caller meets a stateful
// 2025-11-25 upstream through two replicas sharing Redis. Its requests reach one upstream
// session whichever replica serves them, and keep the state the upstream holds per
// session; another principal never shares it; two 2025 face sessions of one principal are
// two callers.
func TestMCPAffinityAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	up := serveVersioned(t, true)
	yaml := affinityConfig(up.url, "session_affinity: caller")
	a, b := startMCPReplicas(t, srv, yaml)

	aliceA, aliceB := faceClient(t, a.base, "alice-key", ""), faceClient(t, b.base, "alice-key", "")
	bobA, bobB := faceClient(t, a.base, "bob-key", ""), faceClient(t, b.base, "bob-key", "")

	aliceSession := affToolText(t, aliceA, "whoami", nil)
	if got := affToolText(t, aliceB, "whoami", nil); got != aliceSession {
		t.Fatalf("alice on the second replica: upstream session %s, want %s", got, aliceSession)
	}
	affToolText(t, aliceA, "remember", map[string]any{"value": "alice's note"})
	affToolText(t, bobB, "remember", map[string]any{"value": "bob's note"})
	if got := affToolText(t, aliceB, "recall", nil); got != "alice's note" {
		t.Fatalf("alice recalls %q on the second replica", got)
	}
	bobSession := affToolText(t, bobA, "whoami", nil)
	if bobSession == aliceSession {
		t.Fatal("bob was served on alice's upstream session")
	}
	if got := affToolText(t, bobB, "whoami", nil); got != bobSession {
		t.Fatalf("bob on the second replica: %s, want %s", got, bobSession)
	}
	if got := affToolText(t, bobA, "recall", nil); got != "bob's note" {
		t.Fatalf("bob recalls %q", got)
	}
	// Interleaved, many times: no request of one lands on the other's session.
	for i := range 10 {
		for _, c := range []struct {
			c    *client.Client
			want string
		}{{aliceA, aliceSession}, {bobB, bobSession}, {aliceB, aliceSession}, {bobA, bobSession}} {
			if got := affToolText(t, c.c, "whoami", nil); got != c.want {
				t.Fatalf("round %d: session %s, want %s", i, got, c.want)
			}
		}
	}

	// A token holder keeps its session when its token is refreshed: the caller is the
	// token's issuer and subject, not its bytes.
	now := time.Now()
	token := func(iat time.Time) string {
		return signDev(t, map[string]any{"iss": "gatehouse-dev", "sub": "carol", "aud": "gatehouse",
			"iat": iat.Unix(), "exp": iat.Add(time.Hour).Unix()})
	}
	first, refreshed := token(now.Add(-time.Minute)), token(now)
	if first == refreshed {
		t.Fatal("the refreshed token is the same token")
	}
	carol := affToolText(t, faceClientWith(t, a.base, map[string]string{"Authorization": "Bearer " + first}, ""), "whoami", nil)
	if got := affToolText(t, faceClientWith(t, b.base, map[string]string{"Authorization": "Bearer " + refreshed}, ""), "whoami", nil); got != carol {
		t.Fatalf("carol with a refreshed token on the second replica: %s, want %s", got, carol)
	}
	if carol == aliceSession || carol == bobSession {
		t.Fatal("carol was served on another principal's session")
	}

	// 2025 callers: each face session is a caller of its own, and keeps its upstream
	// session when the face session moves to the other replica.
	s1 := faceClient(t, a.base, "alice-key", mcp.ProtocolVersion20251125)
	s2 := faceClient(t, a.base, "alice-key", mcp.ProtocolVersion20251125)
	one, two := affToolText(t, s1, "whoami", nil), affToolText(t, s2, "whoami", nil)
	if one == two || one == aliceSession || two == aliceSession {
		t.Fatalf("alice's two face sessions and her stateless calls: %s, %s, %s", one, two, aliceSession)
	}
	moved := faceClient(t, b.base, "alice-key", mcp.ProtocolVersion20251125)
	_ = moved.Close()
	hc := httpClient(t)
	call := `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"whoami","arguments":{}},"id":9}`
	status, _, body := mcpExchangeAs(t, hc, "alice-key", http.MethodPost, b.base+"/mcp", s1.GetSessionId(), call)
	if status != http.StatusOK || !strings.Contains(body, one) {
		t.Fatalf("alice's face session 1 on the second replica: %d %s, want upstream session %s", status, body, one)
	}
	if d := up.deleted(); slices.Contains(d, aliceSession) || slices.Contains(d, bobSession) || slices.Contains(d, one) {
		t.Fatalf("sessions in use were deleted: %v", d)
	}
	if got := a.scrape()[`gatehouse_mcp_caller_sessions{upstream="st"}`]; got != 5 {
		t.Fatalf("the first replica holds %v caller sessions, want 5 (alice, bob, carol, alice's two face sessions)", got)
	}
}

// TestMCPVersionMatrixBridged: the gateway answers each caller in its own revision,
// whatever its upstream speaks: a 2026-07-28 caller through to a 2025-11-25 upstream, and
// a 2025-11-25 caller through to a 2026-07-28 upstream — tools with progress, resources,
// prompts.
func TestMCPVersionMatrixBridged(t *testing.T) {
	for _, tt := range []struct {
		name          string
		callerVersion string // "" negotiates 2026-07-28
		legacyOnly    bool
		upstreamSays  string // the MCP-Protocol-Version on the upstream's tools/call
		probe         string // how the gateway learnt what the upstream speaks
		upstream      string // more keys of the upstream
	}{
		{"2026 caller to a 2025 upstream", "", true, mcp.ProtocolVersion20251125, "initialize", ""},
		{"2026 caller to a 2025 upstream, a session of its own", "", true, mcp.ProtocolVersion20251125, "initialize", "session_affinity: caller"},
		{"2025 caller to a 2026 upstream", mcp.ProtocolVersion20251125, false, mcp.ProtocolVersion20260728, "server/discover", ""},
		{"2025 caller to a 2026 upstream under caller affinity", mcp.ProtocolVersion20251125, false, mcp.ProtocolVersion20260728, "server/discover", "session_affinity: caller"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := serveVersioned(t, tt.legacyOnly)
			ts := startWith(t, affinityConfig(up.url, tt.upstream), Options{})
			waitForTools(t, ts)
			c := faceClient(t, ts.base, "alice-key", tt.callerVersion)
			var mu sync.Mutex
			var progress []float64
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == string(mcp.MethodNotificationProgress) {
					mu.Lock()
					defer mu.Unlock()
					p, _ := n.Params.AdditionalFields["progress"].(float64)
					progress = append(progress, p)
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			req := mcp.CallToolRequest{}
			req.Params.Name = "test_tool_with_progress"
			req.Params.Meta = &mcp.Meta{ProgressToken: "matrix-1"}
			res, err := c.CallTool(ctx, req)
			if err != nil || res.IsError {
				t.Fatalf("test_tool_with_progress: %+v, %v", res, err)
			}
			mu.Lock()
			got := slices.Clone(progress)
			mu.Unlock()
			if len(got) == 0 || !slices.IsSorted(got) {
				t.Fatalf("progress %v, want increasing reports", got)
			}
			rr := mcp.ReadResourceRequest{}
			rr.Params.URI = "test://static-text"
			read, err := c.ReadResource(ctx, rr)
			if err != nil || len(read.Contents) == 0 {
				t.Fatalf("resources/read: %+v, %v", read, err)
			}
			gp := mcp.GetPromptRequest{}
			gp.Params.Name = "test_simple_prompt"
			prompt, err := c.GetPrompt(ctx, gp)
			if err != nil || len(prompt.Messages) == 0 {
				t.Fatalf("prompts/get: %+v, %v", prompt, err)
			}
			if v := up.callVersions(); len(v) == 0 || v[len(v)-1] != tt.upstreamSays {
				t.Fatalf("the upstream's tools/call came as %v, want %s", v, tt.upstreamSays)
			}
			metric := fmt.Sprintf(`gatehouse_mcp_upstream_protocol{negotiated="true",probe=%q,upstream="st",version=%q}`, tt.probe, tt.upstreamSays)
			if got, ok := ts.scrape()[metric]; !ok || got != 1 {
				t.Fatalf("%s = %v (present %v)", metric, got, ok)
			}
		})
	}
}

// TestMCPAffinityConfig: the keys' edges as the configuration file meets them.
func TestMCPAffinityConfig(t *testing.T) {
	for _, tt := range []struct {
		name, keys, err string
	}{
		{"caller", "session_affinity: caller", ""},
		{"shared", "session_affinity: shared", ""},
		{"unknown mode", "session_affinity: sticky", "session_affinity"},
		{"bounds", "caller_sessions: {max: 100000, idle_timeout: 1m, record_ttl: 1m}", ""},
		{"max past its ceiling", "caller_sessions: {max: 100001}", "max"},
		{"max zero", "caller_sessions: {max: 0}", "max"},
		{"record shorter than idle", "caller_sessions: {idle_timeout: 2m, record_ttl: 1m}", "record_ttl must be at least idle_timeout"},
		{"unknown key", "caller_sessions: {ttl: 1m}", "ttl"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(affinityConfig("http://127.0.0.1:1/mcp", tt.keys)))
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("Parse: %v, want %q", err, tt.err)
			}
		})
	}
}
