package server

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/benchutil"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkMCPToolCall compares a cheap MCP tool call (the demo fixture's test_simple_text,
// a stdio child running `gatehouse demo-mcp`) made as a JSON-RPC call over loopback HTTP
// through the gateway with the same call made by a direct mcp-go client to the same kind of
// child, at 1 and at 32 concurrent callers. The gateway keeps one upstream session, so the
// 32-caller figure also measures pipelining on one session.
func BenchmarkMCPToolCall(b *testing.B) {
	bin := gatehouseBinary(b)
	callers := []int{1, 32}
	const want = `This is a simple text response for testing.`
	b.Run("gateway", func(b *testing.B) {
		url := benchGatewayYAML(b, fmt.Sprintf(`
routing:
  mcp:
    direct_zones: [external]
    servers:
      - name: demo
        stdio: {command: %q, args: [demo-mcp]}
`, bin))
		const body = `{"jsonrpc":"2.0","method":"mcp.test_simple_text","params":{},"id":1}`
		hc := benchClient()
		for i := 0; post(hc, url, body, want) != nil; i++ { // the child starts in the background
			if i > 500 {
				b.Fatal("the MCP upstream never became ready")
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, c := range callers {
			b.Run("c"+strconv.Itoa(c), func(b *testing.B) {
				benchutil.Callers(b, c, func(context.Context) error { return post(hc, url, body, want) })
			})
		}
	})
	b.Run("direct", func(b *testing.B) {
		cli, err := client.NewStdioMCPClient(bin, nil, "demo-mcp")
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = cli.Close() }()
		init := mcp.InitializeRequest{}
		init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
		init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
		if _, err := cli.Initialize(context.Background(), init); err != nil {
			b.Fatal(err)
		}
		for _, c := range callers {
			b.Run("c"+strconv.Itoa(c), func(b *testing.B) {
				benchutil.Callers(b, c, func(ctx context.Context) error {
					r := mcp.CallToolRequest{}
					r.Params.Name, r.Params.Arguments = "test_simple_text", map[string]any{}
					res, err := cli.CallTool(ctx, r)
					if err == nil && (res.IsError || len(res.Content) == 0) {
						err = fmt.Errorf("%w: %+v", errUnexpected, res)
					}
					return err
				})
			})
		}
	})
}

// gatehouseBinary builds cmd/gatehouse into a temporary directory of tb (without the race
// detector, so benchmarks of its `demo-mcp` child measure the real thing) and returns its
// path. The build cache makes every build after the first one a link.
func gatehouseBinary(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "gatehouse")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/gatehouse").CombinedOutput(); err != nil {
		tb.Fatalf("building gatehouse: %v\n%s", err, out)
	}
	return bin
}
