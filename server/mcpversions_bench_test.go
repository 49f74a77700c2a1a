package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/internal/benchutil"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkMCPVersions measures tools/call of a 2026-07-28 client through the gateway's MCP
// face to a streamable HTTP upstream the gateway speaks 2026-07-28 to (gateway_2026) and one
// it speaks 2025-11-25 to (gateway_2025: the gateway keeps the upstream session for the
// stateless caller), each beside the same server called directly by a client of the
// revision the gateway speaks to it (direct_2026, direct_2025). The upstream is the demo MCP
// fixture (mcp-go's server, which answers both revisions) in this process.
func BenchmarkMCPVersions(b *testing.B) {
	h := demo.NewMCP(demo.MCPOptions{Logger: slog.New(slog.DiscardHandler)}).StreamableHTTPHandler()
	hs := httptest.NewServer(h)
	b.Cleanup(func() {
		_ = h.Shutdown(context.Background())
		hs.Close()
	})
	upstream := hs.URL + "/mcp"
	run := func(b *testing.B, url, version string) {
		cli := benchMCPVersionClient(b, url, version)
		call := func(ctx context.Context) error {
			r := mcp.CallToolRequest{}
			r.Params.Name = "test_simple_text"
			res, err := cli.CallTool(ctx, r)
			if err == nil && (res.IsError || len(res.Content) == 0) {
				err = fmt.Errorf("%w: %+v", errUnexpected, res)
			}
			return err
		}
		for i := 0; call(context.Background()) != nil; i++ { // the upstream session starts in the background
			if i > 500 {
				b.Fatal("the MCP upstream never became ready")
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, c := range []int{1, 32} {
			b.Run("c"+strconv.Itoa(c), func(b *testing.B) { benchutil.Callers(b, c, call) })
		}
	}
	gateway := func(upstreamVersion string) func(b *testing.B) {
		return func(b *testing.B) {
			rpc := benchGatewayYAML(b, fmt.Sprintf(`
mcp_face: {}
routing:
  mcp:
    servers:
      - name: demo
        http: {url: %q}
        protocol_versions: [%s]
`, upstream, upstreamVersion))
			run(b, strings.TrimSuffix(rpc, "/rpc")+"/mcp", mcp.ProtocolVersion20260728)
		}
	}
	b.Run("direct_2026", func(b *testing.B) { run(b, upstream, mcp.ProtocolVersion20260728) })
	b.Run("gateway_2026", gateway(mcp.ProtocolVersion20260728))
	b.Run("direct_2025", func(b *testing.B) { run(b, upstream, mcp.ProtocolVersion20251125) })
	b.Run("gateway_2025", gateway(mcp.ProtocolVersion20251125))
}

// benchMCPVersionClient is an mcp-go streamable HTTP client of url pinned to version.
func benchMCPVersionClient(b *testing.B, url, version string) *client.Client {
	b.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(benchClient()),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(version))
	b.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		b.Fatal(err)
	}
	if res.ProtocolVersion != version {
		b.Fatalf("negotiated %s, want %s", res.ProtocolVersion, version)
	}
	return c
}
