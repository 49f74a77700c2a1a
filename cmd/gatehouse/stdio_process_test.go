package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// spawnStdio starts `gatehouse stdio` with the embedded configuration as a desktop agent
// would, through mcp-go's stdio client, and initializes. With keepStderr the process's
// stderr is collected until it exits; otherwise the client drains it and, as mcp-go does,
// closes it before waiting for the process.
func spawnStdio(t *testing.T, keepStderr bool) (*client.Client, func() *exec.Cmd, *lockedBuffer) {
	t.Helper()
	stderr := &lockedBuffer{}
	var cmd *exec.Cmd
	// GATEHOUSE_BIN names the binary for the configuration's demo-mcp upstream (tests that
	// run commands in-process may have set it to the test binary). The race detector's
	// one-second sleep at exit would outlast the client's wait before SIGTERM.
	env := []string{"GATEHOUSE_BIN=" + binary, "GORACE=atexit_sleep_ms=0"}
	opts := []transport.StdioOption{transport.WithCommandFunc(func(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
		cmd = exec.Command(command, args...)
		cmd.Env = append(os.Environ(), env...)
		if keepStderr {
			cmd.Stderr = stderr
		}
		return cmd, nil
	})}
	if !keepStderr {
		opts = append(opts, transport.WithCommandStderrWriter(stderr))
	}
	c, err := client.NewStdioMCPClientWithOptions(binary, env, []string{"stdio"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "desktop-agent", Version: "1"}
	if res, err := c.Initialize(ctx, init); err != nil || res.ServerInfo.Name != "gatehouse" {
		t.Fatalf("initialize: %+v, %v", res, err)
	}
	return c, func() *exec.Cmd { return cmd }, stderr
}

// TestStdioServesTheDefaultConfiguration runs `gatehouse stdio` beside whatever holds the
// demo gRPC port (a running gateway, or this test): the aggregated catalog, a tool call, a
// resource and a prompt over stdin and stdout; closing stdin ends the process with exit
// status 0, also when the agent closed its stderr first.
func TestStdioServesTheDefaultConfiguration(t *testing.T) {
	if ln, err := net.Listen("tcp", "127.0.0.1:50061"); err == nil { // else someone holds it already
		defer func() { _ = ln.Close() }()
	}
	t.Run("catalog", func(t *testing.T) {
		c, cmd, stderr := spawnStdio(t, true)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil || !hasTool(tools.Tools, "test_simple_text") {
			t.Fatalf("tools/list: %v, %v", tools, err)
		}
		call := mcp.CallToolRequest{}
		call.Params.Name = "test_simple_text"
		res, err := c.CallTool(ctx, call)
		if err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].(mcp.TextContent).Text != "This is a simple text response for testing." {
			t.Fatalf("tools/call: %+v, %v", res, err)
		}
		read := mcp.ReadResourceRequest{}
		read.Params.URI = "test://static-text"
		rr, err := c.ReadResource(ctx, read)
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].(mcp.TextResourceContents).Text != "This is the content of the static text resource." {
			t.Fatalf("resources/read: %+v, %v", rr, err)
		}
		get := mcp.GetPromptRequest{}
		get.Params.Name = "test_simple_prompt"
		if pr, err := c.GetPrompt(ctx, get); err != nil || len(pr.Messages) == 0 {
			t.Fatalf("prompts/get: %+v, %v", pr, err)
		}
		if err := c.Close(); err != nil { // closes stdin and waits for the process
			t.Fatalf("close: %v", err)
		}
		if st := cmd().ProcessState; st == nil || st.ExitCode() != 0 {
			t.Fatalf("exit: %v", st)
		}
		logs := stderr.String()
		for _, want := range []string{`"msg":"serving MCP over stdio"`, `"msg":"stdin closed: stopping"`} {
			if !strings.Contains(logs, want) {
				t.Errorf("stderr lacks %s", want)
			}
		}
		if strings.Contains(logs, `"demo_grpc":"127.0.0.1:50061"`) || strings.Contains(logs, "stopping on a signal") {
			t.Errorf("stderr:\n%s", logs)
		}
	})
	t.Run("stderr closed first", func(t *testing.T) {
		c, cmd, _ := spawnStdio(t, false)
		if err := c.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		if st := cmd().ProcessState; st == nil || st.ExitCode() != 0 {
			t.Fatalf("exit: %v", st)
		}
	})
}

func hasTool(tools []mcp.Tool, name string) bool {
	for _, tool := range tools {
		if tool.Name == name {
			return true
		}
	}
	return false
}
