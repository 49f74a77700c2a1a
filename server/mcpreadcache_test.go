package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// readCacheUpstream is a 2026-07-28 mcp-go server whose resources/read results carry
// ttlMs 60000 and the given cacheScope; reads counts the reads that reached it, and each
// result says which read it was.
func readCacheUpstream(t *testing.T, name string, scope mcp.CacheScope, uris ...string) (url string, reads *atomic.Int64) {
	t.Helper()
	reads = new(atomic.Int64)
	srv := mcpserver.NewMCPServer(name, "1", mcpserver.WithResourceCapabilities(false, false),
		mcpserver.WithMethodCacheHints(mcp.MethodResourcesRead, 60000, scope))
	for _, uri := range uris {
		srv.AddResource(mcp.NewResource(uri, name), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			n := reads.Add(1)
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "text/plain", Text: fmt.Sprintf("read %d", n)}}, nil
		})
	}
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp", reads
}

// readCachePolicy: alice and carol hold admin, bob does not; only admin may read
// priv://secret.
const readCachePolicy = `auth:
  api_keys:
    - {name: alice, hash: %q, scopes: [admin]}
    - {name: bob, hash: %q, scopes: [other]}
    - {name: carol, hash: %q, scopes: [admin]}
policy:
  default: allow
  rules:
    - {id: secret, match: {mcp_resource: priv/priv://secret}, scopes: [admin]}
`

// TestMCPReadCachePerCaller: resources/read results an upstream marks cacheable are served
// again from the read cache — a private one only to the principal it was read for, a
// public one to anyone —, the policy still decides every read (a cached secret is not
// served to a caller the policy refuses), 2026-07-28 callers get the ttl that is left and
// the scope, and the hit ratio is in the metrics.
func TestMCPReadCachePerCaller(t *testing.T) {
	privURL, privReads := readCacheUpstream(t, "priv", mcp.CacheScopePrivate, "priv://doc", "priv://secret")
	pubURL, pubReads := readCacheUpstream(t, "pub", mcp.CacheScopePublic, "pub://doc")
	yaml := faceConfig("127.0.0.1:0", "", "session_key: "+testSessionKey)
	yaml = strings.Replace(yaml, "routing:\n  demo: {}\n", fmt.Sprintf(`routing:
  mcp:
    servers:
      - {name: priv, http: {url: %q}}
      - {name: pub, http: {url: %q}}
`, privURL, pubURL), 1)
	yaml = strings.Replace(yaml, "auth:\n  anonymous: {}\n",
		fmt.Sprintf(readCachePolicy, apiKeyHash("alice-key"), apiKeyHash("bob-key"), apiKeyHash("carol-key")), 1)
	ts := startWith(t, yaml, Options{})
	waitFor(t, func() bool { return len(ts.mcp.MCPServer().ListResources()) == 3 })
	hc := httpClient(t)

	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	type readResult struct {
		text  string
		ttl   *int64
		scope string
		code  int
	}
	read := func(key, uri string) readResult {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"` + uri + `",` + meta + `}}`
		status, out := modernRequest(t, hc, ts.base+"/mcp", key, "resources/read", uri, body)
		if status != http.StatusOK && status != http.StatusForbidden {
			t.Fatalf("resources/read %s as %s: HTTP %d %s", uri, key, status, out)
		}
		if i := strings.LastIndex(out, "data: "); strings.HasPrefix(out, "event:") && i >= 0 {
			out = strings.TrimSpace(out[i+len("data: "):])
		}
		var r struct {
			Result struct {
				Contents []struct {
					Text string `json:"text"`
				} `json:"contents"`
				TTLMs      *int64 `json:"ttlMs"`
				CacheScope string `json:"cacheScope"`
			} `json:"result"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("resources/read %s as %s: %v: %s", uri, key, err, out)
		}
		if r.Error != nil {
			return readResult{code: r.Error.Code}
		}
		if len(r.Result.Contents) != 1 {
			t.Fatalf("resources/read %s as %s: %s", uri, key, out)
		}
		return readResult{text: r.Result.Contents[0].Text, ttl: r.Result.TTLMs, scope: r.Result.CacheScope}
	}
	before := ts.scrape()

	// Private: each principal reads its own copy once; carol holds alice's scopes but is
	// another principal.
	first := map[string]string{}
	for range 3 {
		for _, key := range []string{"alice-key", "bob-key", "carol-key"} {
			got := read(key, "priv://doc")
			if prev, ok := first[key]; ok && got.text != prev {
				t.Fatalf("%s: second read %q, first %q: not served from the cache", key, got.text, prev)
			}
			first[key] = got.text
			if got.ttl == nil || *got.ttl <= 0 || *got.ttl > 60000 || got.scope != "private" {
				t.Fatalf("%s: ttlMs %v, cacheScope %q; want 0 < ttl <= 60000, private", key, got.ttl, got.scope)
			}
		}
	}
	if n := privReads.Load(); n != 3 {
		t.Errorf("private resource: %d reads reached the upstream, want 3 (one per principal)", n)
	}
	if first["alice-key"] == first["bob-key"] || first["alice-key"] == first["carol-key"] {
		t.Errorf("a private result was served to another principal: %v", first)
	}

	// Public: one upstream read for everyone; the gateway still says private to callers
	// who came with credentials.
	var texts []string
	for range 2 {
		for _, key := range []string{"alice-key", "bob-key", "carol-key"} {
			got := read(key, "pub://doc")
			texts = append(texts, got.text)
			if got.scope != "private" {
				t.Errorf("%s: public upstream result relayed as %q to a caller with credentials; want private", key, got.scope)
			}
		}
	}
	if n := pubReads.Load(); n != 1 {
		t.Errorf("public resource: %d reads reached the upstream, want 1: %q", n, texts)
	}

	// The policy decides before the cache: alice's cached secret is not bob's.
	if got := read("alice-key", "priv://secret"); got.code != 0 {
		t.Fatalf("alice reading priv://secret: error %d", got.code)
	}
	if got := read("bob-key", "priv://secret"); got.code == 0 || got.text != "" {
		t.Fatalf("bob read priv://secret (%q): the policy must refuse before the cache", got.text)
	}

	after := ts.scrape()
	hits := after["gatehouse_mcp_read_cache_hits_total{}"] - before["gatehouse_mcp_read_cache_hits_total{}"]
	misses := after["gatehouse_mcp_read_cache_misses_total{}"] - before["gatehouse_mcp_read_cache_misses_total{}"]
	if hits != 11 || misses != 5 {
		t.Errorf("read cache metrics: %v hits, %v misses; want 11 and 5", hits, misses)
	}
}

// modernRequest posts a stateless 2026-07-28 request as the caller of key, with its
// routing headers, and returns the status and the body.
func modernRequest(t *testing.T, hc *http.Client, url, key, method, name, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
