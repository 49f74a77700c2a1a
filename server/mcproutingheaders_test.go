package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// seenRequest is what an upstream MCP server received in one POST.
type seenRequest struct {
	method, name, version string // the Mcp-Method, Mcp-Name and Mcp-Protocol-Version headers
	body                  string
}

// recordingUpstream is an mcp-go server (every protocol revision, 2026-07-28 included)
// with the tools "public" and "secret", recording each POST it receives and each call.
type recordingUpstream struct {
	url   string
	mu    sync.Mutex
	posts []seenRequest
	calls map[string]int
}

func newRecordingUpstream(t *testing.T) *recordingUpstream {
	t.Helper()
	u := &recordingUpstream{calls: map[string]int{}}
	srv := mcpserver.NewMCPServer("up", "1", mcpserver.WithToolCapabilities(false))
	for _, name := range []string{"public", "secret"} {
		srv.AddTool(mcp.NewTool(name, mcp.WithDescription("the "+name+" tool")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.mu.Lock()
			u.calls[name]++
			u.mu.Unlock()
			return mcp.NewToolResultText(name + " ran"), nil
		})
	}
	srv.AddPrompt(mcp.NewPrompt("greet", mcp.WithPromptDescription("a greeting")), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("greet", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hello"))}), nil
	})
	h := mcpserver.NewStreamableHTTPServer(srv)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			u.mu.Lock()
			u.posts = append(u.posts, seenRequest{r.Header.Get("Mcp-Method"), r.Header.Get("Mcp-Name"), r.Header.Get("Mcp-Protocol-Version"), string(b)})
			u.mu.Unlock()
			r.Body = io.NopCloser(strings.NewReader(string(b)))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	u.url = ts.URL + "/mcp"
	return u
}

func (u *recordingUpstream) snapshot() ([]seenRequest, map[string]int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seenRequest(nil), u.posts...), maps.Clone(u.calls)
}

// toolCalls returns the tools/call POSTs the upstream received.
func (u *recordingUpstream) toolCalls() []seenRequest { return u.requests("tools/call") }

// requests returns the POSTs of method the upstream received.
func (u *recordingUpstream) requests(method string) []seenRequest {
	posts, _ := u.snapshot()
	var out []seenRequest
	for _, p := range posts {
		if strings.Contains(p.body, `"`+method+`"`) {
			out = append(out, p)
		}
	}
	return out
}

// TestMCPRoutingHeadersSmuggling: a 2026-07-28 request whose routing headers disagree with
// its body, repeat, or whose body repeats a member (in any case) is refused with HTTP 400
// and -32020 (or -32600) before the policy runs: a tool the policy denies hidden behind the
// name of an allowed one never reaches the upstream. An honest request passes, and the
// gateway sets both headers on what it sends the 2026-07-28 upstream.
func TestMCPRoutingHeadersSmuggling(t *testing.T) {
	up := newRecordingUpstream(t)
	yaml := strings.Replace(faceConfig("127.0.0.1:0", "", "session_key: "+testSessionKey),
		"routing:\n  demo: {}\n", fmt.Sprintf("routing:\n  mcp:\n    servers:\n      - name: up\n        http: {url: %q}\n", up.url), 1)
	yaml = strings.Replace(yaml, "auth:\n  anonymous: {}\n", fmt.Sprintf(`auth:
  api_keys:
    - {name: alice, hash: %q, scopes: [tools.call]}
policy:
  zones:
    external: {reach: [mcp]}
  rules:
    - {id: public, match: {mcp_tool: up/public}, scopes: [tools.call], mutation: READ_ONLY}
    - {id: secret, match: {mcp_tool: up/secret}, scopes: [admin], mutation: READ_ONLY}
    - {id: greet, match: {mcp_prompt: up/greet}, scopes: [tools.call]}
`, apiKeyHash("alice-key")), 1)
	ts := startWith(t, yaml, Options{})
	waitForTools(t, ts)
	hc := httpClient(t)
	url := ts.base + "/mcp"

	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	callOf := func(params string) string {
		return `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{` + params + `,` + meta + `}}`
	}
	post := func(headers [][2]string, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-API-Key", "alice-key")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		for _, kv := range headers {
			req.Header[kv[0]] = append(req.Header[kv[0]], kv[1]) // the spelling as given
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	m := func(v string) [2]string { return [2]string{"Mcp-Method", v} }
	n := func(v string) [2]string { return [2]string{"Mcp-Name", v} }

	tests := []struct {
		name    string
		headers [][2]string
		body    string
		code    int
	}{
		{"denied tool behind an allowed name", [][2]string{m("tools/call"), n("public")}, callOf(`"name":"secret"`), mcp.HEADER_MISMATCH},
		{"denied tool behind another method", [][2]string{m("tools/list"), n("public")}, callOf(`"name":"secret"`), mcp.HEADER_MISMATCH},
		{"method value in another case", [][2]string{m("TOOLS/CALL"), n("secret")}, callOf(`"name":"secret"`), mcp.HEADER_MISMATCH},
		{"name value in another case", [][2]string{m("tools/call"), n("Secret")}, callOf(`"name":"secret"`), mcp.HEADER_MISMATCH},
		{"header name in lower case, value lying", [][2]string{{"mcp-method", "tools/call"}, {"mcp-name", "public"}}, callOf(`"name":"secret"`), mcp.HEADER_MISMATCH},
		{"name sent twice", [][2]string{m("tools/call"), n("public"), n("secret")}, callOf(`"name":"secret"`), mcp.HEADER_MISMATCH},
		{"name sent twice in two spellings", [][2]string{m("tools/call"), n("secret"), {"MCP-NAME", "secret"}}, callOf(`"name":"secret"`), mcp.HEADER_MISMATCH},
		{"method sent twice", [][2]string{m("tools/call"), {"mcp-method", "tools/call"}, n("secret")}, callOf(`"name":"secret"`), mcp.HEADER_MISMATCH},
		{"name for a method that has none", [][2]string{m("tools/list"), n("secret")}, `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{` + meta + `}}`, mcp.HEADER_MISMATCH},
		{"name missing", [][2]string{m("tools/call")}, callOf(`"name":"secret"`), mcp.HEADER_MISMATCH},
		{"method missing", [][2]string{n("secret")}, callOf(`"name":"secret"`), mcp.HEADER_MISMATCH},
		{"repeated name in params", [][2]string{m("tools/call"), n("public")}, callOf(`"name":"public","name":"secret"`), mcp.INVALID_REQUEST},
		{"name repeated in another case", [][2]string{m("tools/call"), n("public")}, callOf(`"name":"public","NAME":"secret"`), mcp.INVALID_REQUEST},
		{"repeated key in _meta", [][2]string{m("tools/call"), n("public")}, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"public","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, mcp.INVALID_REQUEST},
		{"repeated _meta", [][2]string{m("tools/call"), n("public")}, callOf(`"name":"public","_meta":{}`), mcp.INVALID_REQUEST},
		{"repeated method", [][2]string{m("tools/call"), n("public")}, `{"jsonrpc":"2.0","id":5,"method":"tools/list","method":"tools/call","params":{"name":"public",` + meta + `}}`, mcp.INVALID_REQUEST},
		{"batch", [][2]string{m("tools/call"), n("secret")}, "[" + callOf(`"name":"secret"`) + "]", mcp.INVALID_REQUEST},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(tt.headers, tt.body)
			var r response
			if err := json.Unmarshal([]byte(body), &r); err != nil || status != http.StatusBadRequest || r.Error == nil || r.Error.Code != tt.code {
				t.Fatalf("%d %s, want 400 with code %d", status, body, tt.code)
			}
		})
	}
	if calls := up.toolCalls(); len(calls) != 0 {
		t.Fatalf("the upstream received tools/call requests: %+v", calls)
	}

	// The honest request for the denied tool is the policy's to refuse: it never reaches the
	// upstream either.
	status, body := post([][2]string{m("tools/call"), n("secret")}, callOf(`"name":"secret"`))
	if status == http.StatusOK && !strings.Contains(body, `"error"`) || strings.Contains(body, "secret ran") {
		t.Fatalf("the denied tool: %d %s", status, body)
	}
	// An honest call of the allowed tool reaches it, and the gateway names it in the headers.
	status, body = post([][2]string{{"mcp-method", "tools/call"}, {"MCP-NAME", "=?base64?cHVibGlj?="}}, callOf(`"name":"public"`))
	if status != http.StatusOK || !strings.Contains(body, "public ran") {
		t.Fatalf("the allowed tool: %d %s", status, body)
	}
	_, calls := up.snapshot()
	if calls["secret"] != 0 || calls["public"] != 1 {
		t.Fatalf("upstream calls %v, want public once and secret never", calls)
	}
	seen := up.toolCalls()
	if len(seen) != 1 || seen[0].method != "tools/call" || seen[0].name != "public" || seen[0].version != mcp.ProtocolVersion20260728 {
		t.Fatalf("the upstream saw %+v, want one 2026-07-28 tools/call with Mcp-Method and Mcp-Name set", seen)
	}
	// A prompts/get carries the prompt's name upstream as well.
	status, body = post([][2]string{m("prompts/get"), n("greet")}, `{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"greet",`+meta+`}}`)
	if status != http.StatusOK || !strings.Contains(body, "hello") {
		t.Fatalf("prompts/get: %d %s", status, body)
	}
	if seen := up.requests("prompts/get"); len(seen) != 1 || seen[0].method != "prompts/get" || seen[0].name != "greet" {
		t.Fatalf("the upstream saw %+v, want one prompts/get with Mcp-Method and Mcp-Name set", seen)
	}
	// A client of an earlier revision need not send the headers; when it does, they are
	// checked the same way, and the fast path routes on them once they agree.
	status, hdr, body := mcpExchangeAs(t, hc, "alice-key", http.MethodPost, url, "", // no sampling: a session the fast path serves
		`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"9"}},"id":1}`)
	sid := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	post25 := func(name, tool string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"`+tool+`","arguments":{}},"id":8}`))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "X-API-Key": "alice-key",
			"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18", "Mcp-Method": "tools/call", "Mcp-Name": name} {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := post25("public", "secret"); status != http.StatusBadRequest || !strings.Contains(body, `"code":-32020`) {
		t.Fatalf("a 2025-06-18 call with a lying Mcp-Name: %d %s", status, body)
	}
	fast := ts.mcp.FastToolCalls()
	if status, body := post25("public", "public"); status != http.StatusOK || !strings.Contains(body, "public ran") {
		t.Fatalf("a 2025-06-18 call with agreeing headers: %d %s", status, body)
	}
	if ts.mcp.FastToolCalls() != fast+1 {
		t.Fatalf("the fast path served %d calls, want %d", ts.mcp.FastToolCalls(), fast+1)
	}
	if _, calls := up.snapshot(); calls["secret"] != 0 || calls["public"] != 2 {
		t.Fatalf("upstream calls %v, want public twice and secret never", calls)
	}

	posts, _ := up.snapshot()
	for _, p := range posts {
		if p.version == mcp.ProtocolVersion20260728 && p.method == "" {
			t.Errorf("a 2026-07-28 request without Mcp-Method reached the upstream: %s", p.body)
		}
	}
}
