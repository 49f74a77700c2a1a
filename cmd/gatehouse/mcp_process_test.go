package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/conformance"
	toolv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/tool/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// startWithDemoMCP starts a gateway bridging `gatehouse demo-mcp` over stdio, with extra
// top-level YAML, and waits until its tools answer.
func startWithDemoMCP(t *testing.T, extra string) *process {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	_ = os.WriteFile(cfg, []byte(fmt.Sprintf(`auth: {anonymous: {}}
%s
routing:
  mcp:
    direct_zones: [external, internal]
    servers:
      - name: demo
        stdio: {command: %q, args: [demo-mcp]}
        sampling: client
        elicitation: client
`, extra, binary)), 0o600)
	p := startProcess(t, cfg)
	waitFor(t, func() bool {
		out, _ := p.call(`{"jsonrpc":"2.0","method":"mcp.test_simple_text","params":{},"id":1}`)
		return strings.Contains(out, `"result"`)
	})
	return p
}

// TestDemoMCPBridgedOverStdio bridges `gatehouse demo-mcp` (the conformance fixtures) as a
// stdio upstream and calls its tools through the JSON-RPC boundary.
func TestDemoMCPBridgedOverStdio(t *testing.T) {
	p := startWithDemoMCP(t, "")
	out, _ := p.call(`{"jsonrpc":"2.0","method":"mcp.test_simple_text","params":{},"id":1}`)
	if !strings.Contains(out, `This is a simple text response for testing.`) {
		t.Fatalf("test_simple_text: %s", out)
	}
	out, _ = p.call(`{"jsonrpc":"2.0","method":"mcp.test_error_handling","params":{},"id":2}`)
	if !strings.Contains(out, `"code":1001`) {
		t.Fatalf("a tool error must be TOOL_FAILED: %s", out)
	}
}

// TestToolServiceOverGRPC invokes bridged MCP tools with tool.v1.ToolService on the
// internal listener.
func TestToolServiceOverGRPC(t *testing.T) {
	internal := startWithDemoMCP(t, `server: {internal: {addr: "127.0.0.1:0"}}`).internal
	conn, err := grpc.NewClient(internal, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	client := toolv1.NewToolServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var list *toolv1.ListToolsResponse
	waitFor(t, func() bool {
		list, err = client.ListTools(ctx, &toolv1.ListToolsRequest{NamePrefix: "test_"})
		return err == nil && len(list.GetTools()) > 5
	})
	var simple *toolv1.ToolDescriptor
	for _, d := range list.GetTools() {
		if d.GetName() == "test_simple_text" {
			simple = d
		}
	}
	if simple == nil || simple.GetInputSchema() == nil || len(simple.GetVersion()) != 16 {
		t.Fatalf("test_simple_text descriptor: %v", simple)
	}

	r, err := client.ToolInvocation(ctx, &toolv1.ToolInvocationRequest{InvocationId: "inv-1", ToolName: "test_simple_text"})
	if err != nil || r.GetStatus() != toolv1.ToolResultStatus_TOOL_RESULT_STATUS_SUCCESS || r.GetInvocationId() != "inv-1" ||
		r.GetContent()[0].GetText() != "This is a simple text response for testing." || r.GetProvenance().GetProducer() != "demo" {
		t.Fatalf("simple text: %v %v", r, err)
	}
	r, err = client.ToolInvocation(ctx, &toolv1.ToolInvocationRequest{ToolName: "test_image_content"})
	if err != nil || len(r.GetContent()) != 1 || r.GetContent()[0].GetBlob().GetMimeType() != "image/png" || len(r.GetContent()[0].GetBlob().GetData()) == 0 {
		t.Fatalf("image: %v %v", r, err)
	}
	r, err = client.ToolInvocation(ctx, &toolv1.ToolInvocationRequest{ToolName: "test_error_handling"})
	if err != nil || r.GetStatus() != toolv1.ToolResultStatus_TOOL_RESULT_STATUS_ERROR || r.GetErrorMessage() == "" {
		t.Fatalf("tool error: %v %v", r, err)
	}
	if _, err := client.ToolInvocation(ctx, &toolv1.ToolInvocationRequest{ToolName: "no_such_tool"}); status.Code(err) != codes.NotFound {
		t.Fatalf("unknown tool: %v", err)
	}
}

// TestGatewayMCPFaceConformance runs the official MCP conformance suite against the
// gateway's /mcp face fronting `gatehouse demo-mcp`, comparing with
// internal/conformance/expected-failures-gateway.txt.
func TestGatewayMCPFaceConformance(t *testing.T) {
	p := startWithDemoMCP(t, "mcp_face: {}")
	conformance.VerifyURL(t, filepath.Join("..", "..", conformance.DefaultToolsDir),
		strings.TrimSuffix(p.rpc, "/rpc")+"/mcp",
		filepath.Join("..", "..", "internal", "conformance", "expected-failures-gateway.txt"))
}
