package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// readsPolicy gives the demo server's static resources, its template and its simple
// prompt the scope docs.read, the prompt with arguments the scope admin; everything else
// is denied. alice holds docs.read, bob another scope, root both.
const readsPolicy = `auth:
  api_keys:
    - {name: alice, hash: %q, scopes: [docs.read]}
    - {name: bob, hash: %q, scopes: [other]}
    - {name: root, hash: %q, scopes: [docs.read, admin]}
policy:
  default: deny
  rules:
    - {id: static, match: {mcp_resource: "demo/test://static-*"}, scopes: [docs.read]}
    - {id: template, match: {mcp_resource: "demo/test://template/*"}, scopes: [docs.read]}
    - {id: simple, match: {mcp_prompt: demo/test_simple_prompt}, scopes: [docs.read]}
    - {id: args, match: {mcp_prompt: demo/test_prompt_with_arguments}, scopes: [admin]}
`

// readsGateway serves the MCP face in front of the demo MCP server under readsPolicy
// (policy false: without the policy section, every caller anonymous).
func readsGateway(t *testing.T, policy bool) *testServer {
	t.Helper()
	yaml := faceConfig("127.0.0.1:0", demoUpstream(t, demo.MCPOptions{}), "session_key: "+testSessionKey)
	if policy {
		yaml = strings.Replace(yaml, "auth:\n  anonymous: {}\n",
			fmt.Sprintf(readsPolicy, apiKeyHash("alice-key"), apiKeyHash("bob-key"), apiKeyHash("root-key")), 1)
	}
	ts := startWith(t, yaml, Options{})
	waitForCatalog(t, ts)
	return ts
}

// waitForCatalog waits until the face has published the upstream's tools, resources and
// prompts (it sets them one kind after the other).
func waitForCatalog(t *testing.T, ts *testServer) {
	t.Helper()
	waitFor(t, func() bool {
		return len(ts.mcp.MCPServer().ListTools()) > 0 && len(ts.mcp.MCPServer().ListResources()) > 0 && len(ts.mcp.MCPServer().ListPrompts()) > 0
	})
}

// mcpSession opens a session on the face as the caller of key ("" for none) and returns a
// function sending one JSON-RPC message on it.
func mcpSession(t *testing.T, ts *testServer, key string) func(body string) (int, http.Header, string) {
	t.Helper()
	hc := httpClient(t)
	url := ts.base + "/mcp"
	status, hdr, body := mcpExchangeAs(t, hc, key, http.MethodPost, url, "", initializeBody)
	sid := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize as %q: %d %s", key, status, body)
	}
	return func(body string) (int, http.Header, string) {
		return mcpExchangeAs(t, hc, key, http.MethodPost, url, sid, body)
	}
}

const (
	readStatic   = `{"jsonrpc":"2.0","method":"resources/read","params":{"uri":"test://static-text"},"id":7}`
	readWatched  = `{"jsonrpc":"2.0","method":"resources/read","params":{"uri":"test://watched-resource"},"id":7}`
	readTemplate = `{"jsonrpc":"2.0","method":"resources/read","params":{"uri":"test://template/42/data"},"id":7}`
	getSimple    = `{"jsonrpc":"2.0","method":"prompts/get","params":{"name":"test_simple_prompt"},"id":7}`
	getArgs      = `{"jsonrpc":"2.0","method":"prompts/get","params":{"name":"test_prompt_with_arguments","arguments":{"arg1":"a","arg2":"b"}},"id":7}`
	completeArgs = `{"jsonrpc":"2.0","method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},` +
		`"argument":{"name":"arg1","value":"pa"}},"id":7}`
	completeTemplate = `{"jsonrpc":"2.0","method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"test://template/{id}/data"},` +
		`"argument":{"name":"id","value":"12"}},"id":7}`
)

// TestMCPFaceReadsDecidedByPolicy: resources/read, prompts/get and completion/complete on
// the face are decided by mcp_resource and mcp_prompt rules — allowed with the rule's
// scope; refused without it (4002, 403 step-up challenge) or without a rule under default
// deny (4000 no_rule), as the gateway's JSON-RPC error with the trace id — and a completion
// is decided as the prompt it completes. Each is counted under its read method.
func TestMCPFaceReadsDecidedByPolicy(t *testing.T) {
	ts := readsGateway(t, true)
	sessions := map[string]func(string) (int, http.Header, string){}
	for _, key := range []string{"alice-key", "bob-key", "root-key"} {
		sessions[key] = mcpSession(t, ts, key)
	}
	before := ts.scrape()
	tests := []struct {
		name, key, body string
		code            int    // 0: a result
		want            string // in the body of a result
	}{
		{"read with the scope", "alice-key", readStatic, 0, "This is the content of the static text resource."},
		{"read of a template's resource", "alice-key", readTemplate, 0, `test://template/42/data`},
		{"read without the scope", "bob-key", readStatic, 4002, ""},
		{"read no rule matches", "alice-key", readWatched, 4000, ""},
		{"get with the scope", "alice-key", getSimple, 0, "This is a simple prompt for testing."},
		{"get without the scope", "alice-key", getArgs, 4002, ""},
		{"get with both scopes", "root-key", getArgs, 0, "Prompt with arguments: arg1='a', arg2='b'"},
		{"complete a prompt the caller may not get", "alice-key", completeArgs, 4002, ""},
		{"complete a prompt the caller may get", "root-key", completeArgs, 0, `"paris"`},
		{"complete a readable template", "alice-key", completeTemplate, 0, `"123"`},
		{"complete a template without the scope", "bob-key", completeTemplate, 4002, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, hdr, body := sessions[tt.key](tt.body)
			var r response
			if err := json.Unmarshal([]byte(body), &r); err != nil {
				t.Fatalf("%d %s", status, body)
			}
			if tt.code == 0 {
				if status != http.StatusOK || r.Error != nil || !strings.Contains(string(r.Result), tt.want) {
					t.Fatalf("got %d %s, want a result with %s", status, body, tt.want)
				}
				return
			}
			if r.Error == nil || r.Error.Code != tt.code || string(r.ID) != "7" || r.Error.Data["trace_id"] == nil || hdr.Get("X-Trace-Id") == "" {
				t.Fatalf("got %d %s, want error %d with a trace id", status, body, tt.code)
			}
			challenge := hdr.Get("WWW-Authenticate")
			if tt.code == 4002 && (status != http.StatusForbidden || !strings.Contains(challenge, `error="insufficient_scope"`)) {
				t.Fatalf("insufficient scope answered %d %q", status, challenge)
			}
			if tt.code == 4000 && r.Error.Data["reason"] != "no_rule" {
				t.Fatalf("reason %v, want no_rule", r.Error.Data["reason"])
			}
		})
	}
	after := ts.scrape()
	for k, want := range map[string]float64{
		`protocol_requests_total{method="mcp.resources/read",protocol="mcp",status="success",version="2025-06-18"}`:      2,
		`protocol_requests_total{method="mcp.resources/read",protocol="mcp",status="error",version="2025-06-18"}`:        2,
		`protocol_requests_total{method="mcp.prompts/get",protocol="mcp",status="success",version="2025-06-18"}`:         2,
		`protocol_requests_total{method="mcp.completion/complete",protocol="mcp",status="success",version="2025-06-18"}`: 2,
	} {
		if got := after[k] - before[k]; got != want {
			t.Errorf("%s moved by %v, want %v", k, got, want)
		}
	}
}

// listed returns the names (resources: URIs, templates: URI templates) a list method
// shows on the session.
func listed(t *testing.T, send func(string) (int, http.Header, string), method string) []string {
	t.Helper()
	_, _, body := send(`{"jsonrpc":"2.0","method":"` + method + `","id":3}`)
	var r struct {
		Result struct {
			Resources []struct {
				URI string `json:"uri"`
			} `json:"resources"`
			ResourceTemplates []struct {
				URITemplate string `json:"uriTemplate"`
			} `json:"resourceTemplates"`
			Prompts []struct {
				Name string `json:"name"`
			} `json:"prompts"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("%s: %s", method, body)
	}
	out := []string{}
	for _, x := range r.Result.Resources {
		out = append(out, x.URI)
	}
	for _, x := range r.Result.ResourceTemplates {
		out = append(out, x.URITemplate)
	}
	for _, x := range r.Result.Prompts {
		out = append(out, x.Name)
	}
	slices.Sort(out)
	return out
}

// TestMCPFaceReadListsVisibility: resources/list, resources/templates/list and
// prompts/list show a caller what it may read and get; without a policy, everything.
func TestMCPFaceReadListsVisibility(t *testing.T) {
	withPolicy := readsGateway(t, true)
	open := readsGateway(t, false)
	allResources := []string{"test://static-binary", "test://static-text", "test://watched-resource"}
	tests := []struct {
		name                         string
		ts                           *testServer
		key                          string
		resources, templates, prompt []string
	}{
		{"docs.read", withPolicy, "alice-key", []string{"test://static-binary", "test://static-text"},
			[]string{"test://template/{id}/data"}, []string{"test_simple_prompt"}},
		{"another scope", withPolicy, "bob-key", []string{}, []string{}, []string{}},
		{"docs.read and admin", withPolicy, "root-key", []string{"test://static-binary", "test://static-text"},
			[]string{"test://template/{id}/data"}, []string{"test_prompt_with_arguments", "test_simple_prompt"}},
		{"no policy", open, "", allResources, []string{"test://template/{id}/data"},
			[]string{"test_prompt_with_arguments", "test_prompt_with_embedded_resource", "test_prompt_with_image", "test_simple_prompt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			send := mcpSession(t, tt.ts, tt.key)
			for _, c := range []struct {
				method string
				want   []string
			}{{"resources/list", tt.resources}, {"resources/templates/list", tt.templates}, {"prompts/list", tt.prompt}} {
				if got := listed(t, send, c.method); !slices.Equal(got, c.want) {
					t.Errorf("%s = %q, want %q", c.method, got, c.want)
				}
			}
		})
	}
	// Without a policy every read still runs through the pipeline: it is counted.
	send := mcpSession(t, open, "")
	before := open.scrape()
	if status, _, body := send(readWatched); status != http.StatusOK || !strings.Contains(body, `"contents"`) {
		t.Fatalf("read without a policy: %d %s", status, body)
	}
	k := `protocol_requests_total{method="mcp.resources/read",protocol="mcp",status="success",version="2025-06-18"}`
	if got := open.scrape()[k] - before[k]; got != 1 {
		t.Fatalf("%s moved by %v, want 1", k, got)
	}
}
