package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

// visibilityPolicy gives the demo's subtract and sum the scope "math" and the bridged
// test_simple_text the scope "tools"; everything else is open (default allow).
const visibilityPolicy = `nekte: {}
mcp_face: {}
policy:
  default: allow
  rules:
    - {id: math, match: {method: "su*"}, scopes: [math], mutation: READ_ONLY}
    - {id: simple, match: {mcp_tool: "demo/test_simple_text"}, scopes: [tools], mutation: READ_ONLY}
`

// startVisibility serves the demo target and the demo MCP fixture under visibilityPolicy,
// anonymous callers holding scopes (policy: false leaves the policy section out), and
// waits until the bridged tools are in the catalog.
func startVisibility(t *testing.T, scopes string, withPolicy bool) *testServer {
	t.Helper()
	yaml := strings.Replace(baseConfig, "  anonymous: {}\n", "  anonymous: {scopes: ["+scopes+"]}\n", 1)
	if withPolicy {
		yaml += visibilityPolicy
	} else {
		yaml += "nekte: {}\nmcp_face: {}\n"
	}
	ts := start(t, withDemoMCP(t, yaml, ""), nil)
	waitFor(t, func() bool { // the MCP catalog loads after start
		return slices.Contains(discoverIDs(t, ts, 0), "test_image_content")
	})
	return ts
}

// discoverIDs returns the ids nekte.discover lists at level.
func discoverIDs(t *testing.T, ts *testServer, level int) []string {
	t.Helper()
	r := ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.discover","params":{"level":`+string(rune('0'+level))+`},"id":1}`)
	var res struct {
		Caps []struct {
			ID   string `json:"id"`
			Desc string `json:"desc"`
		} `json:"caps"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
		t.Fatalf("discover: %+v %s", r.Error, r.Result)
	}
	ids := make([]string, 0, len(res.Caps))
	described := false
	for _, c := range res.Caps {
		ids = append(ids, c.ID)
		described = described || c.Desc != ""
	}
	if level > 0 && len(ids) > 0 && !described {
		t.Fatalf("level %d result without descriptions: %s", level, r.Result)
	}
	return ids
}

// cardIDs returns the caps of the agent card.
func cardIDs(t *testing.T, ts *testServer) []string {
	t.Helper()
	resp, err := http.Get(ts.base + "/.well-known/nekte.json")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var card struct {
		Caps []string `json:"caps"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	return card.Caps
}

// mcpFaceClient is an initialized streamable HTTP MCP client of the face.
func mcpFaceClient(t *testing.T, ts *testServer) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := client.NewStreamableHttpClient(ts.base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	if err := cli.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcp.Implementation{Name: "visibility-test", Version: "1"}
	if _, err := cli.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return cli
}

// listTools returns the names tools/list shows, once the face has published the catalog.
func listTools(t *testing.T, cli *client.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var names []string
	waitFor(t, func() bool {
		res, err := cli.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			return false
		}
		names = names[:0]
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return slices.Contains(names, "test_image_content")
	})
	return names
}

// TestDiscoveryShowsWhatScopesAllow lists the catalog through nekte.discover (L0 and L1),
// the agent card and the MCP face's tools/list, as callers with and without the scopes
// the policy asks for, and without a policy.
func TestDiscoveryShowsWhatScopesAllow(t *testing.T) {
	tests := []struct {
		name      string
		scopes    string
		policy    bool
		shown     []string // capability ids nekte.discover must list
		hidden    []string // and must not
		toolShown bool     // tools/list shows test_simple_text
	}{
		{"no scopes", "", true, []string{"get_data", "update", "test_image_content"}, []string{"subtract", "sum", "test_simple_text"}, false},
		{"math", "math", true, []string{"subtract", "sum", "update"}, []string{"test_simple_text"}, false},
		{"math and tools", "math, tools", true, []string{"subtract", "sum", "test_simple_text", "test_image_content"}, nil, true},
		{"no policy section", "", false, []string{"subtract", "sum", "test_simple_text"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startVisibility(t, tt.scopes, tt.policy)
			for _, level := range []int{0, 1} {
				ids := discoverIDs(t, ts, level)
				for _, id := range tt.shown {
					if !slices.Contains(ids, id) {
						t.Errorf("L%d: %s missing from %q", level, id, ids)
					}
				}
				for _, id := range tt.hidden {
					if slices.Contains(ids, id) {
						t.Errorf("L%d: %s listed in %q", level, id, ids)
					}
				}
			}
			card := cardIDs(t, ts)
			// the card is anyone's: under a policy it lists what a caller without scopes sees
			if listed := slices.Contains(card, "subtract"); listed == tt.policy || !slices.Contains(card, "get_data") {
				t.Errorf("card lists subtract = %v under policy %v: %q", listed, tt.policy, card)
			}
			tools := listTools(t, mcpFaceClient(t, ts))
			if got := slices.Contains(tools, "test_simple_text"); got != tt.toolShown {
				t.Errorf("tools/list shows test_simple_text = %v, want %v: %q", got, tt.toolShown, tools)
			}
		})
	}
}

// TestHiddenToolIsStillDecidedByPolicy calls a tool tools/list hides: the policy stage
// refuses it, naming the missing scope, rather than the face calling it unknown.
func TestHiddenToolIsStillDecidedByPolicy(t *testing.T) {
	ts := startVisibility(t, "", true)
	cli := mcpFaceClient(t, ts)
	listTools(t, cli)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "test_simple_text"
	res, err := cli.CallTool(ctx, req)
	if err == nil || !strings.Contains(err.Error(), "scope") {
		t.Fatalf("got %+v, %v; want the policy's insufficient-scope error", res, err)
	}
	r := ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.invoke","params":{"cap":"subtract","in":{"minuend":3,"subtrahend":1}},"id":1}`)
	if r.Error == nil || r.Error.Code != 4002 {
		t.Fatalf("invoke of a hidden capability: %+v %s; want 4002", r.Error, r.Result)
	}
}

// TestVisibilityFilter asks the visibility of a running configuration about single
// capabilities, as callers holding various scopes.
func TestVisibilityFilter(t *testing.T) {
	ts := startVisibility(t, "", true)
	rt := ts.acquire()
	defer rt.release()
	v := newVisibility(rt.policy, rt.table)
	tests := []struct {
		name   string
		scopes []string
		id     string
		method string
		want   bool
	}{
		{"open builtin", nil, "get_data", "get_data", true},
		{"scoped builtin without the scope", nil, "subtract", "subtract", false},
		{"scoped builtin with the scope", []string{"math"}, "subtract", "subtract", true},
		{"scoped tool without the scope", []string{"math"}, "test_simple_text", "mcp.test_simple_text", false},
		{"scoped tool with the scope", []string{"tools"}, "test_simple_text", "mcp.test_simple_text", true},
		{"unrouted method", []string{"math", "tools"}, "nothing", "no.such.method", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			visible := v.Visible(gateway.Principal{Subject: "tester", Scopes: tt.scopes}, gateway.ZoneExternal, gateway.ProtocolHTTP)
			if got := visible(capability.Capability{ID: tt.id, Method: tt.method}); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
