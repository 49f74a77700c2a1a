package routing_test

import (
	"context"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// builtin is a target served in the process.
type builtin struct{}

func (builtin) Name() string { return "builtin" }

func (builtin) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) { return nil, nil }

// TestTableMCP: the table names the MCP bridge's target it routes, and none without one.
func TestTableMCP(t *testing.T) {
	tb := routing.NewTable()
	if err := tb.Add("sum", builtin{}); err != nil {
		t.Fatal(err)
	}
	if mt := tb.MCP(); mt != nil {
		t.Fatalf("MCP() = %v without a bridge, want nil", mt)
	}

	tb, err := routing.Build(routing.Config{MCP: &routing.MCPConfig{Servers: []mcpbackend.Config{
		{Name: "up", HTTP: &mcpbackend.HTTPConfig{URL: "http://127.0.0.1:1/mcp"}}}}}, routing.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tb.Close() })
	if err := tb.Add("sum", builtin{}); err != nil {
		t.Fatal(err)
	}
	mt := tb.MCP()
	routed, _ := tb.Lookup("mcp.anything")
	if mt == nil || gateway.Target(mt) != routed {
		t.Fatalf("MCP() = %v, want the target of the mcp. prefix (%v)", mt, routed)
	}
}

// TestBackendNames: gRPC backends by name, MCP servers under mcpbackend.BackendPrefix.
func TestBackendNames(t *testing.T) {
	cfg := routing.Config{
		GRPC: []grpcbackend.Config{{Name: "calc"}},
		MCP:  &routing.MCPConfig{Servers: []mcpbackend.Config{{Name: "fs"}}},
	}
	got := cfg.BackendNames()
	if len(got) != 2 || !got["calc"] || !got[mcpbackend.BackendPrefix+"fs"] {
		t.Errorf("backend names %v", got)
	}
	if got := (routing.Config{}).BackendNames(); len(got) != 0 {
		t.Errorf("no backends: %v", got)
	}
}
