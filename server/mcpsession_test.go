package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/state"
)

const (
	testSessionKey  = "0123456789abcdef0123456789abcdef-test"
	otherSessionKey = "fedcba9876543210fedcba9876543210-other"
	testTimeout     = 20 * time.Second
)

// demoUpstream serves the MCP fixture (demo.MCP) over streamable HTTP on a loopback
// port until the test ends, and returns its URL.
func demoUpstream(t *testing.T, opts demo.MCPOptions) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ReadHeaderTimeout: testTimeout}
	handler := demo.NewMCP(opts).StreamableHTTPHandler(mcpserver.WithStreamableHTTPServer(hs))
	hs.Handler = handler
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := handler.Shutdown(ctx); err != nil {
			t.Errorf("upstream shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("upstream: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// faceConfig is a configuration serving the MCP face in front of the upstream at url
// (none when url is empty), with extra mcp_face keys.
func faceConfig(boundary, url, face string) string {
	routing := "routing:\n  demo: {}\n"
	if url != "" {
		routing = fmt.Sprintf("routing:\n  mcp:\n    servers:\n      - name: demo\n        http: {url: %q}\n", url)
	}
	return fmt.Sprintf(`server:
  boundary: {addr: %q}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  anonymous: {}
mcp_face: {%s}
log: {level: debug}
%s`, boundary, face, routing)
}

// startWith is start with Options of the test's choosing.
func startWith(t *testing.T, yaml string, opts Options) *testServer {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return startOptions(t, cfg, opts, nil)
}

// httpClient is an HTTP client whose idle connections are closed when the test ends.
func httpClient(t *testing.T) *http.Client {
	t.Helper()
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: testTimeout}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// mcpExchange sends one JSON-RPC message to /mcp, with a session ID when sid is set.
func mcpExchange(t *testing.T, hc *http.Client, method, url, sid, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// mcpExchangeAs is mcpExchange with the caller's API key (X-API-Key).
func mcpExchangeAs(t *testing.T, hc *http.Client, key, method, url, sid, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", key)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

const (
	initializeBody = `{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{"sampling":{},"elicitation":{"form":{}},"roots":{"listChanged":true}},"clientInfo":{"name":"agent","version":"9"}},"id":1}`
	toolsListBody = `{"jsonrpc":"2.0","method":"tools/list","id":2}`
)

// initializeRaw opens a session with a raw initialize and returns its ID.
func initializeRaw(t *testing.T, hc *http.Client, url string) string {
	t.Helper()
	status, hdr, body := mcpExchange(t, hc, http.MethodPost, url, "", initializeBody)
	sid := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	return sid
}

// streamableClient connects an mcp-go client to url over streamable HTTP, with extra
// transport options, and initializes.
func streamableClient(t *testing.T, url string, opts ...transport.StreamableHTTPCOption) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, append([]transport.StreamableHTTPCOption{
		transport.WithHTTPBasicClient(httpClient(t)), transport.WithHTTPLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

// callSimpleText lists the tools and calls test_simple_text, failing the test on error.
func callSimpleText(t *testing.T, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if !hasTool(tools.Tools, "test_simple_text") {
		t.Fatalf("tools/list lacks test_simple_text: %d tools", len(tools.Tools))
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "test_simple_text"
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("tools/call: %+v, %v", res, err)
	}
	if text, ok := res.Content[0].(mcp.TextContent); !ok || text.Text != "This is a simple text response for testing." {
		t.Fatalf("tools/call content %+v", res.Content)
	}
}

func hasTool(tools []mcp.Tool, name string) bool {
	for _, tool := range tools {
		if tool.Name == name {
			return true
		}
	}
	return false
}

// waitForTools waits until the face publishes the upstream's tools.
func waitForTools(t *testing.T, ts *testServer) {
	t.Helper()
	waitFor(t, func() bool { return len(ts.mcp.MCPServer().ListTools()) > 0 })
}

// TestMCPSessionSurvivesRestart: a session initialized on one gateway process goes on on
// the next one started on the same port with the same session_key, with no record in the
// (new, embedded) store; a gateway with another key answers it 404.
func TestMCPSessionSurvivesRestart(t *testing.T) {
	upstream := demoUpstream(t, demo.MCPOptions{})
	first := startWith(t, faceConfig("127.0.0.1:0", upstream, "session_key: "+testSessionKey), Options{})
	addr := first.BoundaryAddr().String()
	waitForTools(t, first)
	c := streamableClient(t, first.base+"/mcp")
	callSimpleText(t, c)
	sid := c.GetSessionId()
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

	second := startWith(t, faceConfig(addr, upstream, "session_key: "+testSessionKey), Options{})
	waitForTools(t, second)
	callSimpleText(t, c) // the same client, the same session ID
	if got := c.GetSessionId(); got != sid {
		t.Fatalf("the client changed sessions: %q, then %q", sid, got)
	}
	if err := second.stop(); err != nil {
		t.Fatal(err)
	}

	other := startWith(t, faceConfig(addr, upstream, "session_key: "+otherSessionKey), Options{})
	if status, _, body := mcpExchange(t, httpClient(t), http.MethodPost, other.base+"/mcp", sid, toolsListBody); status != http.StatusNotFound {
		t.Fatalf("another key: %d %s", status, body)
	}
}

// TestMCPSessionRefused: tampered, terminated and unknown session IDs are answered 404 on
// every method; a valid one is served.
func TestMCPSessionRefused(t *testing.T) {
	ts := startWith(t, faceConfig("127.0.0.1:0", "", "session_key: "+testSessionKey), Options{})
	hc := httpClient(t)
	url := ts.base + "/mcp"
	sid := initializeRaw(t, hc, url)
	enc, sig, _ := strings.Cut(sid, ".")
	flip := func(s string) string {
		if s[0] == 'A' {
			return "B" + s[1:]
		}
		return "A" + s[1:]
	}
	forged := forgeSessionID(otherSessionKey, "2025-06-18")
	if status, _, body := mcpExchange(t, hc, http.MethodPost, url, sid, toolsListBody); status != http.StatusOK {
		t.Fatalf("valid session: %d %s", status, body)
	}
	for _, tt := range []struct{ name, sid string }{
		{"payload tampered", flip(enc) + "." + sig},
		{"signature tampered", enc + "." + flip(sig)},
		{"no signature", enc},
		{"signed with another key", forged},
		{"not a token", "mcp-session-0b3c7e2a-5f1d-4a8e-9c6b-2d7f8e9a0b1c"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
				if status, _, body := mcpExchange(t, hc, method, url, tt.sid, toolsListBody); status != http.StatusNotFound {
					t.Errorf("%s: %d %s", method, status, body)
				}
			}
		})
	}
	t.Run("terminated", func(t *testing.T) {
		if status, _, body := mcpExchange(t, hc, http.MethodDelete, url, sid, ""); status != http.StatusOK {
			t.Fatalf("DELETE: %d %s", status, body)
		}
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			if status, _, body := mcpExchange(t, hc, method, url, sid, toolsListBody); status != http.StatusNotFound {
				t.Errorf("%s after DELETE: %d %s", method, status, body)
			}
		}
	})
}

// TestMCPSessionRestoredOnReplica: a replica sharing the state store restores what the
// session's initialize and logging/setLevel recorded; one whose store lost the record
// restores what the token carries.
func TestMCPSessionRestoredOnReplica(t *testing.T) {
	shared := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = shared.Close() })
	a := startWith(t, faceConfig("127.0.0.1:0", "", "session_key: "+testSessionKey), Options{State: shared})
	hc := httpClient(t)
	sid := initializeRaw(t, hc, a.base+"/mcp")
	setLevel := `{"jsonrpc":"2.0","method":"logging/setLevel","params":{"level":"debug"},"id":3}`
	if status, _, body := mcpExchange(t, hc, http.MethodPost, a.base+"/mcp", sid, setLevel); status != http.StatusOK {
		t.Fatalf("setLevel: %d %s", status, body)
	}

	withRecord := startWith(t, faceConfig("127.0.0.1:0", "", "session_key: "+testSessionKey), Options{State: shared})
	withoutRecord := startWith(t, faceConfig("127.0.0.1:0", "", "session_key: "+testSessionKey), Options{})
	caps := `{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{}}}`
	for _, tt := range []struct {
		name string
		ts   *testServer
		want string
	}{
		{"record", withRecord, `{"capabilities":` + caps + `,"client":"agent 9","level":"debug","version":"2025-06-18"}`},
		{"token only", withoutRecord, `{"capabilities":` + caps + `,"client":" ","level":"error","version":"2025-06-18"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.ts.mcp.MCPServer().AddTool(mcp.NewTool("whoami"), whoami)
			call := `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"whoami","arguments":{}},"id":4}`
			status, _, body := mcpExchange(t, hc, http.MethodPost, tt.ts.base+"/mcp", sid, call)
			var res struct {
				Result mcp.CallToolResult `json:"result"`
			}
			if status != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil || len(res.Result.Content) == 0 {
				t.Fatalf("whoami: %d %s", status, body)
			}
			if got := res.Result.Content[0].(mcp.TextContent).Text; got != tt.want {
				t.Fatalf("restored session:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// whoami answers what the calling session knows of its client.
func whoami(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	sess := mcpserver.ClientSessionFromContext(ctx)
	out := map[string]any{}
	if info, ok := sess.(mcpserver.SessionWithClientInfo); ok {
		out["capabilities"] = info.GetClientCapabilities()
		out["client"] = info.GetClientInfo().Name + " " + info.GetClientInfo().Version
	}
	if v, ok := sess.(interface{ ProtocolVersion() string }); ok {
		out["version"] = v.ProtocolVersion()
	}
	if l, ok := sess.(mcpserver.SessionWithLogging); ok {
		out["level"] = l.GetLogLevel()
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultText(string(b)), nil
}

// TestMCPFaceSessionConfig: session_key comes from the environment and must be long
// enough, without the error quoting it; session_ttl is a duration.
func TestMCPFaceSessionConfig(t *testing.T) {
	t.Setenv("GATEHOUSE_TEST_SESSION_KEY", testSessionKey)
	t.Setenv("GATEHOUSE_TEST_SHORT_KEY", "short-secret")
	for _, tt := range []struct {
		name, face string
		key        string
		ttl        time.Duration
		err        string
	}{
		{"defaults", "", "", 0, ""},
		{"key from the environment", `session_key: "${GATEHOUSE_TEST_SESSION_KEY}", session_ttl: 90m`, testSessionKey, 90 * time.Minute, ""},
		{"short key", `session_key: "${GATEHOUSE_TEST_SHORT_KEY}"`, "", 0, "mcp_face.session_key"},
		{"bad ttl", "session_ttl: soon", "", 0, "session_ttl"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("test.yaml", []byte(faceConfig("127.0.0.1:0", "", tt.face)))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "short-secret") {
					t.Fatalf("error %v, want one naming %s without the key", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MCPFace.SessionKey != tt.key || cfg.MCPFace.SessionTTL != tt.ttl {
				t.Fatalf("session_key %q, session_ttl %v", cfg.MCPFace.SessionKey, cfg.MCPFace.SessionTTL)
			}
		})
	}
}

// TestMCPSessionBoundToCaller: a session ID is bound to the caller that initialized it:
// another caller presenting it — to call, to listen, to terminate it — is answered as for
// an unknown session, and the owner's session goes on untouched.
func TestMCPSessionBoundToCaller(t *testing.T) {
	yaml := strings.Replace(faceConfig("127.0.0.1:0", "", "session_key: "+testSessionKey), "auth:\n  anonymous: {}\n",
		fmt.Sprintf("auth:\n  api_keys:\n    - {name: alice, hash: %q}\n    - {name: bob, hash: %q}\n", apiKeyHash("alice-key"), apiKeyHash("bob-key")), 1)
	ts := startWith(t, yaml, Options{})
	hc := httpClient(t)
	url := ts.base + "/mcp"
	as := func(key, method, sid, body string) (int, http.Header) {
		status, hdr, _ := mcpExchangeAs(t, hc, key, method, url, sid, body)
		return status, hdr
	}
	status, hdr := as("alice-key", http.MethodPost, "", initializeBody)
	sid := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("alice's initialize: %d", status)
	}
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		if status, _ := as("bob-key", method, sid, toolsListBody); status != http.StatusNotFound {
			t.Errorf("bob's %s on alice's session: %d, want 404", method, status)
		}
	}
	if status, _ := as("alice-key", http.MethodPost, sid, toolsListBody); status != http.StatusOK {
		t.Fatalf("alice's own session after bob's attempts: %d", status)
	}
	if status, _ := as("alice-key", http.MethodDelete, sid, ""); status != http.StatusOK {
		t.Fatalf("alice terminates her session: %d", status)
	}
}

// forgeSessionID returns a session ID in the gateway's format (mcpface's session token:
// 16 random bytes, issue time, capability bits, owner, protocol version; HMAC-SHA256)
// signed with key, owned by no caller.
func forgeSessionID(key, version string) string {
	payload := make([]byte, 16+8+1+8, 16+8+1+8+len(version))
	_, _ = rand.Read(payload[:16])
	binary.BigEndian.PutUint64(payload[16:], uint64(time.Now().UnixMilli()))
	payload = append(payload, version...)
	m := hmac.New(sha256.New, []byte(key))
	m.Write(payload)
	b64 := base64.RawURLEncoding
	return b64.EncodeToString(payload) + "." + b64.EncodeToString(m.Sum(nil))
}
