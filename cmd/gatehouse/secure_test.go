package main

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
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/demo"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
	"github.com/gatehouse-dev/gatehouse/server"
)

// secureExample is the example configuration under test, relative to this package.
const secureExample = "../../configs/examples/secure.yaml"

// secureGateway is configs/examples/secure.yaml served in this process on free loopback
// ports, with its demo gRPC backend on a free port too.
type secureGateway struct {
	t        *testing.T
	base     string // http://host:port of the boundary
	admin    string // http://host:port of the admin listener
	internal string // host:port of the internal gRPC listener
	logs     *lockedBuffer
}

// startSecure loads secure.yaml as `gatehouse serve --config` does, from a working directory
// that is not the repository (so its relative jwks_file must resolve against the file),
// overrides the listener addresses, and serves it until the test ends.
func startSecure(t *testing.T) *secureGateway {
	t.Helper()
	file, err := filepath.Abs(secureExample)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(selfEnv, binary) // the demo MCP server is this binary's demo-mcp
	t.Chdir(t.TempDir())
	cfg, err := loadConfig(file)
	if err != nil {
		t.Fatalf("loading %s: %v", file, err)
	}
	if cfg.Auth.Anonymous != nil || cfg.Auth.JWT == nil || cfg.Auth.KeyRing == nil || cfg.Policy == nil || cfg.MCPFace == nil ||
		cfg.WebSocket == nil || cfg.Server.Internal == nil {
		t.Fatal("secure.yaml must require JWTs (no anonymous access), have a key ring, a policy, and serve WebSocket, /mcp and gRPC")
	}
	overrides := server.ListenOverrides{BoundaryAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0"}
	overrides.Apply(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	calcDone := serveDemoCalculator(ctx, t, cfg)

	logs := &lockedBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := server.New(cfg, server.Options{Logger: logger, Overrides: overrides})
	if err != nil {
		cancel()
		<-calcDone
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- srv.Run(ctx) }()
	g := &secureGateway{t: t, base: "http://" + srv.BoundaryAddr().String(), admin: "http://" + srv.AdminAddr().String(),
		internal: srv.InternalAddr().String(), logs: logs}
	t.Cleanup(func() {
		cancel()
		if err := <-runDone; err != nil {
			t.Errorf("server stopped with %v", err)
		}
		<-calcDone
		if t.Failed() {
			t.Logf("gateway logs:\n%s", logs.String())
		}
	})
	g.waitReady()
	return g
}

// serveDemoCalculator serves the calculator.v1 demo backend on a free port instead of the
// fixed server.demo_grpc address, and points the routes to that address at it; the
// returned channel closes when it has stopped after ctx ends.
func serveDemoCalculator(ctx context.Context, t *testing.T, cfg *server.Config) <-chan struct{} {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	routed := false
	for i := range cfg.Routing.GRPC {
		if cfg.Server.DemoGRPC != nil && cfg.Routing.GRPC[i].Address == cfg.Server.DemoGRPC.Addr {
			cfg.Routing.GRPC[i].Address, routed = ln.Addr().String(), true
		}
	}
	if !routed {
		_ = ln.Close()
		t.Fatal("secure.yaml routes no gRPC backend to its server.demo_grpc address")
	}
	cfg.Server.DemoGRPC = nil
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = demo.ServeCalculator(ctx, ln)
	}()
	return done
}

// waitReady waits until /readyz answers 200: the gRPC backend's descriptors and the MCP
// server's catalog are loaded.
func (g *secureGateway) waitReady() {
	g.t.Helper()
	waitFor(g.t, func() bool {
		resp, err := http.Get(g.admin + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// mint prints a token with `gatehouse token` and the development key, as the README does
// (the key's path is relative to this package: mint before changing the working directory).
func mint(t *testing.T, sub, scope string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"token", "--key", devKey, "--sub", sub, "--scope", scope}, &stdout, &stderr); code != 0 {
		t.Fatalf("gatehouse token: exit %d: %s", code, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// reply is an HTTP response read whole.
type reply struct {
	status int
	header http.Header
	body   string
}

// rpcReply is a decoded JSON-RPC response.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

// post sends body to url with token (none when ""), and extra headers as name, value pairs.
func (g *secureGateway) post(ctx context.Context, url, token, body string, header ...string) reply {
	g.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		g.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// call makes one JSON-RPC call on the boundary's /rpc (admin false) or the admin listener's.
func (g *secureGateway) call(admin bool, token, method, params string) (reply, rpcReply) {
	g.t.Helper()
	url := g.base + "/rpc"
	if admin {
		url = g.admin + "/rpc"
	}
	r := g.post(context.Background(), url, token, fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s,"id":1}`, method, params))
	return r, decodeReply(g.t, r.body)
}

func decodeReply(t *testing.T, body string) rpcReply {
	t.Helper()
	var r rpcReply
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("response %q: %v", body, err)
	}
	return r
}

// mcp posts one JSON-RPC message to /mcp; it returns the response and its Mcp-Session-Id.
func (g *secureGateway) mcp(token, sid, body string) (reply, string) {
	g.t.Helper()
	header := []string{"Accept", "application/json, text/event-stream"}
	if sid != "" {
		header = append(header, "Mcp-Session-Id", sid)
	}
	r := g.post(context.Background(), g.base+"/mcp", token, body, header...)
	return r, r.header.Get("Mcp-Session-Id")
}

const mcpInitialize = `{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}},"id":1}`

// grpcInvoke calls gatehouse.v1.GatewayService/Invoke on the internal listener with token
// in the authorization metadata (none when "").
func (g *secureGateway) grpcInvoke(token, method, params string) (string, error) {
	g.t.Helper()
	conn, err := grpc.NewClient(g.internal, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		g.t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	resp, err := gatehousev1.NewGatewayServiceClient(conn).Invoke(ctx, &gatehousev1.InvokeRequest{Method: method, Params: []byte(params)})
	return string(resp.GetResult()), err
}

// TestSecureExample serves configs/examples/secure.yaml and drives it over its real faces
// with tokens from `gatehouse token`: every face refuses a caller without a token; a token
// lacking a scope gets 4002 naming it; tokens with the scopes reach the gRPC backend, the
// built-in demo and the MCP server's tools; the DESTRUCTIVE calc.update is held until an
// operator with the admin scope approves (the caller gets the result) or denies it (4003);
// callers without that scope cannot see or decide approvals. No token reaches the logs.
func TestSecureExample(t *testing.T) {
	reader := mint(t, "alice", "calc.read")
	toolUser := mint(t, "tess", "tools.read")
	writer := mint(t, "walter", "calc.read calc.write calc.admin")
	operator := mint(t, "olivia", "admin.approvals")
	unscoped := mint(t, "nobody", "")
	g := startSecure(t) // changes the working directory

	t.Run("no token is refused on every face", func(t *testing.T) { g.checkNoToken(t) })
	t.Run("a missing scope is 4002 naming it", func(t *testing.T) {
		tests := []struct {
			token, method, params string
			missing               []string
		}{
			{reader, "calc.update", "[1,2,3]", []string{"calc.write", "calc.admin"}},
			{reader, "calc.notify_hello", "[7]", []string{"calc.write"}},
			{reader, "notify_hello", "[7]", []string{"calc.write"}},
			{toolUser, "calc.subtract", "[42,23]", []string{"calc.read"}},
			{toolUser, "get_data", "[]", []string{"calc.read"}},
			{unscoped, "nekte.discover", `{"level":0}`, []string{"nekte.read"}},
		}
		for _, tt := range tests {
			t.Run(tt.method, func(t *testing.T) {
				r, rr := g.call(false, tt.token, tt.method, tt.params)
				if strings.HasPrefix(tt.method, "nekte.") { // the NEKTE wire contract: errors with 200
					if r.status != http.StatusOK || rr.Error == nil || rr.Error.Code != 4002 {
						t.Fatalf("got %d %s, want 200 with 4002", r.status, r.body)
					}
				} else {
					if r.status != http.StatusForbidden || rr.Error == nil || rr.Error.Code != 4002 {
						t.Fatalf("got %d %s, want 403 with 4002", r.status, r.body)
					}
					if want := `error="insufficient_scope", scope="` + strings.Join(tt.missing, " ") + `"`; !strings.Contains(r.header.Get("WWW-Authenticate"), want) {
						t.Fatalf("WWW-Authenticate %q lacks %s", r.header.Get("WWW-Authenticate"), want)
					}
				}
				if got := strings.Fields(strings.Trim(fmt.Sprint(rr.Error.Data["missing_scopes"]), "[]")); !slices.Equal(got, tt.missing) {
					t.Fatalf("missing_scopes %v, want %v", got, tt.missing)
				}
			})
		}
	})
	t.Run("scoped calls succeed", func(t *testing.T) { g.checkScopedCalls(t, reader, toolUser) })
	t.Run("MCP resources and prompts need tools.read", func(t *testing.T) { g.checkReads(t, reader, toolUser) })
	t.Run("approval: approved runs, denied is 4003", func(t *testing.T) { g.checkApprovals(t, writer, operator, reader) })
	t.Run("the key ring is published", func(t *testing.T) {
		resp, err := http.Get(g.base + "/.well-known/jwks.json")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"alg":"EdDSA"`) {
			t.Fatalf("jwks: %d %s", resp.StatusCode, b)
		}
	})

	for _, tok := range []string{reader, toolUser, writer, operator, unscoped} {
		if sig := tok[strings.LastIndexByte(tok, '.')+1:]; strings.Contains(g.logs.String(), sig) {
			t.Fatal("the gateway logged a token")
		}
	}
}

// checkNoToken: without a credential, HTTP /rpc, the WebSocket upgrade, /mcp and the admin
// API answer 401 with 4001 and a Bearer challenge, and the internal gRPC listener
// Unauthenticated.
func (g *secureGateway) checkNoToken(t *testing.T) {
	const body = `{"jsonrpc":"2.0","method":"calc.subtract","params":[42,23],"id":1}`
	tests := []struct {
		name      string
		do        func() reply
		challenge string
	}{
		{"HTTP", func() reply { return g.post(context.Background(), g.base+"/rpc", "", body) }, `Bearer realm="gatehouse"`},
		{"admin", func() reply { return g.post(context.Background(), g.admin+"/rpc", "", body) }, `Bearer realm="gatehouse"`},
		{"MCP", func() reply { r, _ := g.mcp("", "", mcpInitialize); return r },
			`Bearer realm="gatehouse", resource_metadata="` + g.base + `/.well-known/oauth-protected-resource/mcp"`},
		{"WebSocket", func() reply {
			c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(g.base, "http")+"/ws", nil)
			if err == nil {
				_ = c.Close()
				t.Fatal("the WebSocket upgrade succeeded without a token")
			}
			if !errors.Is(err, websocket.ErrBadHandshake) {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			b, _ := io.ReadAll(resp.Body)
			return reply{resp.StatusCode, resp.Header, string(b)}
		}, `Bearer realm="gatehouse"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.do()
			if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != tt.challenge {
				t.Fatalf("got %d, WWW-Authenticate %q; want 401, %q", r.status, r.header.Get("WWW-Authenticate"), tt.challenge)
			}
			if rr := decodeReply(t, r.body); rr.Error == nil || rr.Error.Code != 4001 || rr.Error.Data["reason"] != "no credential" {
				t.Fatalf("body %s, want 4001 no credential", r.body)
			}
		})
	}
	t.Run("gRPC", func(t *testing.T) {
		if _, err := g.grpcInvoke("", "calc.subtract", "[42,23]"); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("got %v, want Unauthenticated", err)
		}
	})
}

// checkScopedCalls: with the scopes, calls reach the gRPC backend (over HTTP, WebSocket and
// the internal gRPC listener), the built-in demo, and the demo MCP server's tools on /mcp,
// whose tools/list shows them only to a caller with tools.read.
func (g *secureGateway) checkScopedCalls(t *testing.T, reader, toolUser string) {
	for _, method := range []string{"calc.subtract", "subtract"} {
		if r, rr := g.call(false, reader, method, "[42,23]"); string(rr.Result) != "19" {
			t.Fatalf("%s over HTTP: %d %s", method, r.status, r.body)
		}
	}
	header := http.Header{"Authorization": {"Bearer " + reader}}
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(g.base, "http")+"/ws", header)
	if err != nil {
		t.Fatalf("WebSocket with a token: %v", err)
	}
	_ = resp.Body.Close()
	defer func() { _ = c.Close() }()
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"calc.sum","params":[1,2,4],"id":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := c.ReadMessage(); err != nil || string(decodeReply(t, string(msg)).Result) != "7" {
		t.Fatalf("calc.sum over WebSocket: %s %v", msg, err)
	}
	if out, err := g.grpcInvoke(reader, "calc.subtract", "[42,23]"); err != nil || out != "19" {
		t.Fatalf("calc.subtract over gRPC: %q %v", out, err)
	}

	for _, tt := range []struct {
		token   string
		visible bool
	}{{toolUser, true}, {reader, false}} {
		init, sid := g.mcp(tt.token, "", mcpInitialize)
		if init.status != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d %s", init.status, init.body)
		}
		list, _ := g.mcp(tt.token, sid, `{"jsonrpc":"2.0","method":"tools/list","id":2}`)
		if got := strings.Contains(list.body, `"name":"test_simple_text"`); got != tt.visible {
			t.Fatalf("tools/list shows test_simple_text: %v, want %v: %s", got, tt.visible, list.body)
		}
	}
	_, sid := g.mcp(toolUser, "", mcpInitialize)
	r, _ := g.mcp(toolUser, sid, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"test_simple_text","arguments":{}},"id":3}`)
	if !strings.Contains(r.body, "This is a simple text response for testing.") {
		t.Fatalf("tools/call test_simple_text: %d %s", r.status, r.body)
	}
}

// checkReads: the demo MCP server's resources and prompts are read on /mcp with tools.read
// and refused without it (403, 4002, a step-up challenge naming the scope), and
// resources/list and prompts/list show them only to a caller holding it.
func (g *secureGateway) checkReads(t *testing.T, reader, toolUser string) {
	tests := []struct {
		name, token, body, want string // want: in a result; "" for a refusal
	}{
		{"read", toolUser, `{"jsonrpc":"2.0","method":"resources/read","params":{"uri":"test://static-text"},"id":4}`, "This is the content of the static text resource."},
		{"read without tools.read", reader, `{"jsonrpc":"2.0","method":"resources/read","params":{"uri":"test://static-text"},"id":4}`, ""},
		{"get", toolUser, `{"jsonrpc":"2.0","method":"prompts/get","params":{"name":"test_simple_prompt"},"id":4}`, "This is a simple prompt for testing."},
		{"get without tools.read", reader, `{"jsonrpc":"2.0","method":"prompts/get","params":{"name":"test_simple_prompt"},"id":4}`, ""},
		{"list resources", toolUser, `{"jsonrpc":"2.0","method":"resources/list","id":4}`, `"uri":"test://static-text"`},
		{"list prompts", toolUser, `{"jsonrpc":"2.0","method":"prompts/list","id":4}`, `"name":"test_simple_prompt"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, sid := g.mcp(tt.token, "", mcpInitialize)
			r, _ := g.mcp(tt.token, sid, tt.body)
			if tt.want != "" {
				if r.status != http.StatusOK || !strings.Contains(r.body, tt.want) {
					t.Fatalf("got %d %s, want %s", r.status, r.body, tt.want)
				}
				return
			}
			rr := decodeReply(t, r.body)
			if r.status != http.StatusForbidden || rr.Error == nil || rr.Error.Code != 4002 ||
				!strings.Contains(r.header.Get("WWW-Authenticate"), `error="insufficient_scope", scope="tools.read"`) {
				t.Fatalf("got %d %q %s, want 403 with 4002 asking for tools.read", r.status, r.header.Get("WWW-Authenticate"), r.body)
			}
		})
	}
	_, sid := g.mcp(reader, "", mcpInitialize)
	for _, list := range []string{"resources/list", "resources/templates/list", "prompts/list"} {
		r, _ := g.mcp(reader, sid, `{"jsonrpc":"2.0","method":"`+list+`","id":5}`)
		if r.status != http.StatusOK || strings.Contains(r.body, "test://") || strings.Contains(r.body, "test_") {
			t.Fatalf("%s without tools.read: %d %s", list, r.status, r.body)
		}
	}
}

// checkApprovals: calc.update is held as a pending approval, listed by
// admin.approvals.list for a caller with admin.approvals and refused to others; approved,
// its caller gets the result; a second one, denied, gets 4003.
func (g *secureGateway) checkApprovals(t *testing.T, writer, operator, other string) {
	for _, tt := range []struct{ method, params string }{
		{"admin.approvals.list", "{}"},
		{"admin.approvals.approve", `{"id":"0000"}`},
	} {
		if r, rr := g.call(true, writer, tt.method, tt.params); rr.Error == nil || rr.Error.Code != 4002 ||
			fmt.Sprint(rr.Error.Data["missing_scopes"]) != "[admin.approvals]" {
			t.Fatalf("%s with a token without admin.approvals: %d %s", tt.method, r.status, r.body)
		}
	}
	for _, decision := range []struct {
		method, params string
		check          func(rpcReply) bool
	}{
		{"admin.approvals.approve", `{"id":%q,"note":"change 4711"}`, func(r rpcReply) bool { return r.Error == nil && string(r.Result) == "{}" }},
		{"admin.approvals.deny", `{"id":%q,"reason":"not today"}`, func(r rpcReply) bool {
			return r.Error != nil && r.Error.Code == 4003 && r.Error.Data["approval"] == "denied"
		}},
	} {
		held := g.callHeld(writer, `{"jsonrpc":"2.0","method":"calc.update","params":[1,2,3],"id":9}`)
		rec := g.waitPending(operator)
		if rec.Method != "calc.update" || rec.Caller != "walter" || rec.Mutation != "DESTRUCTIVE" || rec.Rule != "calc-update" {
			t.Fatalf("pending approval %+v", rec)
		}
		if r, rr := g.call(true, other, "admin.approvals.list", "{}"); rr.Error == nil || rr.Error.Code != 4002 {
			t.Fatalf("list by a reader: %s", r.body)
		}
		if r, rr := g.call(true, operator, decision.method, fmt.Sprintf(decision.params, rec.ID)); rr.Error != nil {
			t.Fatalf("%s: %s", decision.method, r.body)
		}
		select {
		case body := <-held:
			if !decision.check(decodeReply(t, body)) {
				t.Fatalf("after %s the caller got %s", decision.method, body)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the held call did not end after %s", decision.method)
		}
	}
}

// callHeld posts body to /rpc in the background and delivers the response body.
func (g *secureGateway) callHeld(token, body string) <-chan string {
	out := make(chan string, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	g.t.Cleanup(cancel)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.base+"/rpc", strings.NewReader(body))
		if err != nil {
			out <- err.Error()
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- err.Error()
			return
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		out <- string(b)
	}()
	return out
}

// pendingApproval is a record of admin.approvals.list.
type pendingApproval struct {
	ID       string `json:"id"`
	Method   string `json:"method"`
	Caller   string `json:"caller"`
	Rule     string `json:"rule"`
	Mutation string `json:"mutation"`
}

// waitPending waits until exactly one approval is pending, as listed for operator.
func (g *secureGateway) waitPending(operator string) pendingApproval {
	g.t.Helper()
	var got []pendingApproval
	waitFor(g.t, func() bool {
		r, rr := g.call(true, operator, "admin.approvals.list", "{}")
		if rr.Error != nil {
			g.t.Fatalf("admin.approvals.list: %s", r.body)
		}
		var l struct {
			Pending []pendingApproval `json:"pending"`
		}
		if err := json.Unmarshal(rr.Result, &l); err != nil {
			g.t.Fatal(err)
		}
		got = l.Pending
		return len(got) == 1
	})
	return got[0]
}

// TestSecureExampleValidates: `gatehouse validate` accepts secure.yaml.
func TestSecureExampleValidates(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"validate", "--config", secureExample}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "secure.yaml: ok") {
		t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
	}
}
