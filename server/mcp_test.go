package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/mcptest"
)

// npmServer returns the path of an MCP server installed by `make mcp-servers`; under CI a
// missing server fails the test, elsewhere it skips.
func npmServer(t *testing.T, bin string) string { return mcptest.NPMServer(t, bin) }

// TestMCPToolThroughJSONRPC calls a tool of the real server-everything (npm, over stdio)
// as a JSON-RPC method of the boundary.
func TestMCPToolThroughJSONRPC(t *testing.T) {
	everything := npmServer(t, "mcp-server-everything")
	ts := start(t, strings.Replace(baseConfig, "routing:\n  demo: {}\n", fmt.Sprintf(`routing:
  mcp:
    direct_zones: [external]
    servers:
      - name: everything
        stdio: {command: %q, args: [stdio]}
`, everything), 1), nil)
	var r response
	waitFor(t, func() bool {
		_, _, body := ts.post(`{"jsonrpc":"2.0","method":"mcp.echo","params":{"message":"hello gatehouse"},"id":1}`)
		r = decodeOne(t, body)
		return r.Error == nil
	})
	if !strings.Contains(string(r.Result), "hello gatehouse") {
		t.Fatalf("echo result %s", r.Result)
	}
	_, _, body := ts.post(`{"jsonrpc":"2.0","method":"mcp.no_such_tool","params":{},"id":2}`)
	if r := decodeOne(t, body); r.Error == nil || r.Error.Code != -32002 {
		t.Fatalf("unknown tool: %s", body)
	}
}

func TestMCPFaceAuthAndAbsence(t *testing.T) {
	initialize := `{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}},"id":1}`
	post := func(ts *testServer) (int, http.Header) {
		req, _ := http.NewRequest(http.MethodPost, ts.base+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	t.Run("off", func(t *testing.T) {
		if status, _ := post(start(t, baseConfig, nil)); status != http.StatusNotFound {
			t.Fatalf("status %d", status)
		}
	})
	t.Run("no credential", func(t *testing.T) {
		ts := start(t, strings.Replace(baseConfig, "auth:\n  anonymous: {}\n", "", 1)+"mcp_face: {}\n", nil)
		if status, hdr := post(ts); status != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") == "" {
			t.Fatalf("status %d, headers %v", status, hdr)
		}
	})
	t.Run("on", func(t *testing.T) {
		ts := start(t, baseConfig+"mcp_face: {}\n", nil)
		if status, hdr := post(ts); status != http.StatusOK || hdr.Get("Mcp-Session-Id") == "" {
			t.Fatalf("status %d, headers %v", status, hdr)
		}
	})
}
