package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/internal/benchutil"
)

// BenchmarkMCPListCache compares tools/list through the MCP face with the list cache
// (mcp_face.list_cache, the default) and without it (enabled: false), over the same
// catalog: an in-process streamable HTTP upstream with 60 tools, narrowed by a policy
// whose rules hide part of them from the caller (an anonymous caller holding the scope
// "other"). Each request is a stateless 2026-07-28 tools/list, at 1 and 32 concurrent
// callers; both gateways run side by side, so the sub-benchmarks can be interleaved.
func BenchmarkMCPListCache(b *testing.B) {
	srv := mcpserver.NewMCPServer("up", "1", mcpserver.WithToolCapabilities(true))
	for i := range 60 {
		name := fmt.Sprintf("tool_%02d", i)
		srv.AddTool(mcp.NewTool(name, mcp.WithDescription("The "+name+" tool of the benchmark catalog."),
			mcp.WithString("query", mcp.Required(), mcp.Description("what to look for")),
			mcp.WithNumber("limit", mcp.Description("how many results at most"))),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(name), nil
			})
	}
	up := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	b.Cleanup(up.Close)
	policy := `auth: {anonymous: {scopes: [other]}}
policy:
  default: allow
  rules:
    - {id: ones, match: {mcp_tool: "up/tool_1*"}, scopes: [admin], mutation: READ_ONLY}
    - {id: threes, match: {mcp_tool: "up/tool_3*"}, scopes: [other], mutation: READ_ONLY}
    - {id: fives, match: {mcp_tool: "up/tool_5*"}, scopes: [admin], mutation: READ_ONLY}
    - {id: one, match: {mcp_tool: "up/tool_42"}, scopes: [admin], mutation: READ_ONLY}
routing:
  mcp:
    servers:
      - name: up
        http: {url: %q}
`
	const body = `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
	headers := []string{"Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"}
	face := map[string]string{"cache": "mcp_face: {}\n", "nocache": "mcp_face: {list_cache: {enabled: false}}\n"}
	urls := map[string]string{}
	hc := benchClient()
	for _, name := range []string{"cache", "nocache"} {
		url := strings.TrimSuffix(benchGatewayConfig(b, face[name]+fmt.Sprintf(policy, up.URL+"/mcp")), "/rpc") + "/mcp"
		for i := 0; post(hc, url, body, `"tool_49"`, headers...) != nil; i++ { // the catalog loads after start
			if i > 500 {
				b.Fatalf("%s: the catalog never loaded: %v", name, post(hc, url, body, `"tool_49"`, headers...))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := post(hc, url, body, `"tool_10"`, headers...); err == nil {
			b.Fatalf("%s: tool_10 is listed to a caller without the scope admin", name)
		}
		urls[name] = url
	}
	for _, name := range []string{"cache", "nocache"} {
		for _, c := range []int{1, 32} {
			b.Run(name+"/c"+strconv.Itoa(c), func(b *testing.B) {
				benchutil.Callers(b, c, func(context.Context) error { return post(hc, urls[name], body, `"tool_49"`, headers...) })
			})
		}
	}
}
