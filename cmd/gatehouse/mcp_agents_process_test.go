package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestAgentOperatorsAsMCPTools: the operators of demo-agent processes are tools of the
// gateway's MCP face: listed with their schemas, called through the agent link with the
// output as text and structuredContent, progress relayed, failures as the agent's outcome,
// and gone from the list when their agents are.
func TestAgentOperatorsAsMCPTools(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	body := `auth: {anonymous: {}}
server: {internal: {addr: "127.0.0.1:0"}}
mcp_face: {}
agents:
  heartbeat_interval: 200ms
  missed_heartbeats: 3
  auth: {allow_loopback_anonymous: true}
`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, cfg)
	a1 := startAgent(t, p.internal, "m1", true, "--reconnect=false")
	a2 := startAgent(t, p.internal, "m2", true, "--reconnect=false")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli, err := client.NewStreamableHttpClient(strings.TrimSuffix(p.rpc, "/rpc") + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	var mu sync.Mutex
	var progress []map[string]any
	cli.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			progress = append(progress, n.Params.AdditionalFields)
			mu.Unlock()
		}
	})
	if err := cli.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcp.Implementation{Name: "agents-test", Version: "1"}
	if _, err := cli.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	tools := func() map[string]mcp.Tool {
		res, err := cli.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]mcp.Tool{}
		for _, tool := range res.Tools {
			out[tool.Name] = tool
		}
		return out
	}
	listed := tools()
	for _, name := range []string{"agent.sha256", "agent.matmul", "agent.sleep"} {
		tool, ok := listed[name]
		if !ok {
			t.Fatalf("tools/list lacks %s: %v", name, slices.Collect(func(yield func(string) bool) {
				for n := range listed {
					if !yield(n) {
						return
					}
				}
			}))
		}
		if tool.Description == "" || len(tool.InputSchema.Properties) == 0 || !slices.Contains(tool.OutputSchema.Required, "task_id") {
			t.Errorf("%s: description %q, input schema %+v, output schema %+v", name, tool.Description, tool.InputSchema, tool.OutputSchema)
		}
	}
	call := func(name string, args any, token mcp.ProgressToken) (*mcp.CallToolResult, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		if token != nil {
			req.Params.Meta = &mcp.Meta{ProgressToken: token}
		}
		return cli.CallTool(ctx, req)
	}

	res, err := call("agent.sha256", map[string]any{"text": "hello"}, nil)
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("agent.sha256: %+v, %v", res, err)
	}
	var sc struct {
		Agent  string
		Output struct{ SHA256 string }
	}
	raw, _ := json.Marshal(res.StructuredContent)
	text := res.Content[0].(mcp.TextContent).Text
	if json.Unmarshal(raw, &sc) != nil || sc.Output.SHA256 != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" ||
		(sc.Agent != "m1" && sc.Agent != "m2") || !strings.Contains(text, sc.Output.SHA256) {
		t.Fatalf("agent.sha256: structured %s, text %s", raw, text)
	}

	res, err = call("agent.sleep", map[string]any{"ms": 300, "steps": 3}, "p-7")
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(mcp.TextContent).Text, `"slept_ms"`) {
		t.Fatalf("agent.sleep: %+v, %v", res, err)
	}
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, pr := range progress {
			if pr["progressToken"] == "p-7" {
				n++
			}
		}
		return n >= 2
	})

	// The agent's failure is the tool's error, with its code; a refusal before any agent
	// ran is a JSON-RPC error.
	res, err = call("agent.matmul", map[string]any{"a": [][]float64{{1, 2}}, "b": [][]float64{{1}}}, nil)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(mcp.TextContent).Text, `"code":1003`) {
		t.Fatalf("a failing agent.matmul: %+v, %v", res, err)
	}
	if _, err := call("agent.matmul", map[string]any{"a": "x"}, nil); err == nil || !strings.Contains(err.Error(), "-32602") {
		t.Fatalf("invalid arguments: %v", err)
	}

	// The agents leave: their operators leave the list.
	_ = a1.cmd.Process.Signal(syscall.SIGKILL)
	_ = a2.cmd.Process.Signal(syscall.SIGKILL)
	waitFor(t, func() bool { _, ok := tools()["agent.sha256"]; return !ok })
	if _, err := call("agent.sha256", map[string]any{"text": "x"}, nil); err == nil {
		t.Fatal("a call of a tool whose agents left succeeded")
	}
	// One comes back: so does its operators' tools.
	startAgent(t, p.internal, "m3", true)
	waitFor(t, func() bool { _, ok := tools()["agent.sha256"]; return ok })
	if res, err := call("agent.sha256", map[string]any{"text": "hello"}, nil); err != nil || res.IsError {
		t.Fatalf("after the agent came back: %+v, %v", res, err)
	}
}

// TestAgentOperatorToolsFollowThePolicy: tools/list shows an agent operator's tool only to
// callers the policy lets call its method, and tools/call of it gets the policy's refusal.
func TestAgentOperatorToolsFollowThePolicy(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	body := `auth: {anonymous: {}}
server: {internal: {addr: "127.0.0.1:0"}}
mcp_face: {}
policy:
  default: allow
  rules:
    - match: {method: "agent.sha256"}
      scopes: [hash]
agents:
  heartbeat_interval: 200ms
  missed_heartbeats: 3
  auth: {allow_loopback_anonymous: true}
`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, cfg)
	startAgent(t, p.internal, "pol", true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := client.NewStreamableHttpClient(strings.TrimSuffix(p.rpc, "/rpc") + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	if err := cli.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcp.Implementation{Name: "policy-test", Version: "1"}
	if _, err := cli.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	res, err := cli.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if slices.Contains(names, "agent.sha256") || !slices.Contains(names, "agent.matmul") {
		t.Fatalf("an anonymous caller lists %v; want agent.matmul without agent.sha256", names)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "agent.sha256"
	req.Params.Arguments = map[string]any{"text": "x"}
	if _, err := cli.CallTool(ctx, req); err == nil || !strings.Contains(err.Error(), "INSUFFICIENT_SCOPE (4002)") {
		t.Fatalf("a call of the hidden tool: %v; want the policy's INSUFFICIENT_SCOPE", err)
	}
}
