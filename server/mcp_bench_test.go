package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/internal/benchutil"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
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

// BenchmarkMCPStreamable compares an MCP tools/call (the demo fixture's test_simple_text)
// made by an mcp-go streamable HTTP client through the gateway's MCP face to a streamable
// HTTP upstream with the same client calling that upstream directly, at 1 and 32
// concurrent callers (issue #23's path). gateway_idle2 is the gateway with the upstream
// client keeping two idle connections, as http.DefaultTransport did before
// max_idle_conns: at 32 callers it dials for nearly every call. upstream-conns/op is the
// TCP connections the upstream accepted per call (load-independent, unlike the times).
func BenchmarkMCPStreamable(b *testing.B) {
	upstream, accepted := benchMCPUpstream(b)
	callers := []int{1, 32}
	run := func(b *testing.B, url string) {
		cli := benchMCPClient(b, url)
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
		for _, c := range callers {
			b.Run("c"+strconv.Itoa(c), func(b *testing.B) {
				before := accepted.Load()
				benchutil.Callers(b, c, call)
				b.ReportMetric(float64(accepted.Load()-before)/float64(b.N), "upstream-conns/op")
			})
		}
	}
	gateway := func(idle string) func(b *testing.B) {
		return func(b *testing.B) {
			rpc := benchGatewayYAML(b, fmt.Sprintf(`
mcp_face: {}
routing:
  mcp:
    servers:
      - name: demo
        http: {url: %q%s}
`, upstream, idle))
			run(b, strings.TrimSuffix(rpc, "/rpc")+"/mcp")
		}
	}
	b.Run("gateway", gateway(""))
	b.Run("gateway_idle2", gateway(", max_idle_conns: 2"))
	b.Run("direct", func(b *testing.B) { run(b, upstream) })
}

// benchMCPUpstream serves the demo MCP fixture over streamable HTTP on loopback until the
// benchmark ends and returns its URL and the count of TCP connections it accepted.
func benchMCPUpstream(b *testing.B) (string, *atomic.Int64) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	accepted := &atomic.Int64{}
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second, ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			accepted.Add(1)
		}
	}}
	handler := demo.NewMCP(demo.MCPOptions{Logger: slog.New(slog.DiscardHandler)}).StreamableHTTPHandler(mcpserver.WithStreamableHTTPServer(hs))
	hs.Handler = handler
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := handler.Shutdown(ctx); err != nil {
			b.Errorf("upstream shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			b.Errorf("upstream: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + "/mcp", accepted
}

// benchMCPClient is an initialized mcp-go streamable HTTP client of url, closed when the
// benchmark ends, whose HTTP client keeps enough idle connections for every caller.
func benchMCPClient(b *testing.B, url string) *client.Client {
	b.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPBasicClient(benchClient()),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20250618
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		b.Fatal(err)
	}
	return c
}
