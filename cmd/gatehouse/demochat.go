package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/mark3labs/mcp-go/client"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// demoChat runs the demo chat agent (demo.Chat) until SIGTERM or Ctrl-C: session RPC over
// WebSocket (GET /session) and HTTP+SSE (POST /session/…), with a scripted reply whose
// tool call runs on the demo MCP server.
func demoChat(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo-chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:7391", "host:port to serve on (port 0: a free one, logged)")
	token := fs.String("token", "", "a bearer token every client must present (default $GATEHOUSE_DEMO_CHAT_TOKEN; none: open)")
	delay := fs.Duration("delay", 0, "wait this long between two events of a reply (to watch or abort one)")
	mcpURL := fs.String("mcp-url", "", "a streamable HTTP MCP endpoint serving the demo fixtures (default: start `gatehouse demo-mcp` over stdio)")
	mcpInProcess := fs.Bool("mcp-in-process", false, "serve the demo MCP fixtures in this process instead of a child process")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *token == "" {
		*token = os.Getenv("GATEHOUSE_DEMO_CHAT_TOKEN")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	mc, err := demoChatMCP(ctx, *mcpURL, *mcpInProcess)
	if err != nil {
		fmt.Fprintln(stderr, "demo-chat:", err)
		return 1
	}
	if mc != nil {
		defer func() { _ = mc.Close() }()
	}
	chat, err := demo.NewChat(ctx, demo.ChatOptions{Token: *token, Delay: *delay, MCP: mc, Logger: logger})
	if err != nil {
		fmt.Fprintln(stderr, "demo-chat:", err)
		return 1
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		chat.Close()
		fmt.Fprintln(stderr, "demo-chat:", err)
		return 1
	}
	logger.Info("demo-chat listening", "url", "http://"+ln.Addr().String(), "websocket", "ws://"+ln.Addr().String()+"/session")
	if err := chat.Serve(ctx, ln); err != nil {
		fmt.Fprintln(stderr, "demo-chat:", err)
		return 1
	}
	return 0
}

// demoChatMCP connects the MCP client of the chat's tool calls: to url, or to this
// binary's `demo-mcp` over stdio; nil (the chat's own in-process server) with inProcess.
func demoChatMCP(ctx context.Context, url string, inProcess bool) (*client.Client, error) {
	var mc *client.Client
	var err error
	switch {
	case inProcess:
		return nil, nil //nolint:nilnil // the chat makes its own in-process client
	case url != "":
		mc, err = client.NewStreamableHttpClient(url)
	default:
		exe, xerr := os.Executable()
		if xerr != nil {
			return nil, fmt.Errorf("locating this binary for demo-mcp: %w", xerr)
		}
		mc, err = client.NewStdioMCPClient(exe, nil, "demo-mcp")
	}
	if err != nil {
		return nil, fmt.Errorf("demo MCP server: %w", err)
	}
	if err := demo.InitializeMCPClient(ctx, mc); err != nil {
		_ = mc.Close()
		return nil, err
	}
	return mc, nil
}
