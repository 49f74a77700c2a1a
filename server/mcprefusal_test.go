package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// TestMCPFaceRefusals: a tools/call the pipeline refuses reaches an MCP client as the
// gateway's own JSON-RPC error (code, message, data), not mcp-go's internal error; a
// refusal for insufficient scope is the MCP authorization spec's step-up challenge (403,
// error="insufficient_scope" with the scopes to ask for); an allowed call is untouched.
func TestMCPFaceRefusals(t *testing.T) {
	yaml := strings.Replace(faceConfig("127.0.0.1:0", demoUpstream(t, demo.MCPOptions{}), "session_key: "+testSessionKey),
		"auth:\n  anonymous: {}\n", fmt.Sprintf(`auth:
  api_keys:
    - {name: alice, hash: %q, scopes: [tools.call]}
    - {name: bob, hash: %q, scopes: [other]}
policy:
  zones:
    external: {reach: [mcp]}
  rules:
    - {id: simple, match: {mcp_tool: demo/test_simple_text}, scopes: [tools.call], mutation: READ_ONLY}
`, apiKeyHash("alice-key"), apiKeyHash("bob-key")), 1)
	ts := startWith(t, yaml, Options{})
	waitForTools(t, ts)
	hc := httpClient(t)
	url := ts.base + "/mcp"
	call := `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"test_simple_text","arguments":{}},"id":7}`
	as := func(key, sid, body string) (int, http.Header, string) {
		return mcpExchangeAs(t, hc, key, http.MethodPost, url, sid, body)
	}
	session := func(key string) string {
		status, hdr, body := as(key, "", initializeBody)
		if status != http.StatusOK || hdr.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize: %d %s", status, body)
		}
		return hdr.Get("Mcp-Session-Id")
	}

	status, hdr, body := as("bob-key", session("bob-key"), call)
	var r response
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("bob: %d %s", status, body)
	}
	challenge := hdr.Get("WWW-Authenticate")
	if status != http.StatusForbidden || r.Error == nil || r.Error.Code != 4002 || string(r.ID) != "7" ||
		fmt.Sprint(r.Error.Data["missing_scopes"]) != "[tools.call]" || r.Error.Data["trace_id"] == nil {
		t.Fatalf("bob's refused call: %d %s", status, body)
	}
	for _, want := range []string{`error="insufficient_scope"`, `scope="tools.call"`, `resource_metadata="` + ts.base + `/.well-known/oauth-protected-resource/mcp"`} {
		if !strings.Contains(challenge, want) {
			t.Errorf("challenge %q lacks %s", challenge, want)
		}
	}
	status, _, body = as("alice-key", session("alice-key"), call)
	if status != http.StatusOK || !strings.Contains(body, "This is a simple text response for testing.") {
		t.Fatalf("alice's call: %d %s", status, body)
	}
}
