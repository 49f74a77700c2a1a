package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// listCachePolicy hides the upstream's tool "secret" from callers without the scope admin;
// alice holds admin, bob another scope, carol admin too (another principal, the same view).
const listCachePolicy = `auth:
  api_keys:
    - {name: alice, hash: %q, scopes: [admin]}
    - {name: bob, hash: %q, scopes: [other]}
    - {name: carol, hash: %q, scopes: [admin]}
policy:
  default: allow
  rules:
    - {id: secret, match: {mcp_tool: demo/secret}, scopes: [admin], mutation: READ_ONLY}
`

// listCacheUpstream is an mcp-go server with the tools "public" and "secret"; add adds a
// tool, which sends notifications/tools/list_changed to the gateway's session.
func listCacheUpstream(t *testing.T) (url string, add func(name string)) {
	t.Helper()
	srv := mcpserver.NewMCPServer("up", "1", mcpserver.WithToolCapabilities(true))
	tool := func(name string) {
		srv.AddTool(mcp.NewTool(name, mcp.WithDescription("the "+name+" tool")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(name), nil
		})
	}
	tool("public")
	tool("secret")
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp", tool
}

// toolNames returns the tool names of a tools/list response (JSON or an event stream),
// and its ttlMs and cacheScope.
func toolNames(t *testing.T, body string) (names []string, ttl *int64, scope string) {
	t.Helper()
	if i := strings.LastIndex(body, "data: "); strings.HasPrefix(body, "event:") && i >= 0 {
		body = strings.TrimSpace(body[i+len("data: "):])
	}
	var r struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			TTLMs      *int64 `json:"ttlMs"`
			CacheScope string `json:"cacheScope"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("tools/list: %v: %s", err, body)
	}
	for _, tl := range r.Result.Tools {
		names = append(names, tl.Name)
	}
	return names, r.Result.TTLMs, r.Result.CacheScope
}

// TestMCPListCachePerCaller: callers of different scopes list the tools alternately, over
// 2025 sessions and as stateless 2026-07-28 requests; each always sees exactly its own
// list, a caller with the same view shares the entries, and the hit ratio in the metrics
// is above 0. After the upstream adds a tool (list_changed), every caller sees it.
func TestMCPListCachePerCaller(t *testing.T) {
	upstream, addTool := listCacheUpstream(t)
	yaml := faceConfig("127.0.0.1:0", upstream, "session_key: "+testSessionKey)
	yaml = strings.Replace(yaml, "auth:\n  anonymous: {}\n",
		fmt.Sprintf(listCachePolicy, apiKeyHash("alice-key"), apiKeyHash("bob-key"), apiKeyHash("carol-key")), 1)
	ts := startWith(t, yaml, Options{})
	waitForTools(t, ts)
	hc := httpClient(t)
	url := ts.base + "/mcp"
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	stateless := func(key string) func() string {
		return func() string {
			req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{`+meta+`}}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("X-API-Key", key)
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/list")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
	session := func(key string) func() string {
		send := mcpSession(t, ts, key)
		return func() string { _, _, body := send(toolsListBody); return body }
	}
	type caller struct {
		name   string
		list   func() string
		want   []string
		modern bool
	}
	full, narrowed := []string{"public", "secret"}, []string{"public"}
	callers := []caller{
		{"alice session", session("alice-key"), full, false},
		{"bob session", session("bob-key"), narrowed, false},
		{"alice 2026", stateless("alice-key"), full, true},
		{"bob 2026", stateless("bob-key"), narrowed, true},
		{"carol session", session("carol-key"), full, false},
	}
	before := ts.scrape()
	const rounds = 25
	for i := range rounds {
		for _, c := range callers {
			got, ttl, scope := toolNames(t, c.list())
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("round %d, %s: tools/list = %q, want %q", i, c.name, got, c.want)
			}
			if c.modern && (ttl == nil || *ttl <= 0 || scope != "private") {
				t.Fatalf("round %d, %s: ttlMs %v, cacheScope %q; want a positive ttl, private", i, c.name, ttl, scope)
			}
		}
	}
	after := ts.scrape()
	hits := after["gatehouse_mcp_list_cache_hits_total{}"] - before["gatehouse_mcp_list_cache_hits_total{}"]
	misses := after["gatehouse_mcp_list_cache_misses_total{}"] - before["gatehouse_mcp_list_cache_misses_total{}"]
	if hits+misses != rounds*float64(len(callers)) || hits/(hits+misses) <= 0 {
		t.Fatalf("list cache: %v hits, %v misses over %d lists; want every list counted and a hit ratio > 0", hits, misses, rounds*len(callers))
	}
	// Two views (admin, other) shared by five callers: a miss per view and catalog version,
	// so far fewer misses than hits.
	if misses >= hits {
		t.Errorf("list cache: %v misses for %v hits; two views should miss once per catalog version", misses, hits)
	}

	// The upstream's list_changed moves the catalog version: every caller sees the new tool.
	addTool("extra")
	waitFor(t, func() bool {
		got, _, _ := toolNames(t, callers[1].list())
		return slices.Contains(got, "extra")
	})
	for _, c := range callers {
		got, _, _ := toolNames(t, c.list())
		slices.Sort(got)
		want := append(slices.Clone(c.want), "extra")
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("after list_changed, %s: tools/list = %q, want %q", c.name, got, want)
		}
	}
}
