package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/redistest"
)

// agentReplicas starts a Redis and two replicas sharing it, each with the agent link
// (loopback agents without a credential, 200ms heartbeats, k = 3).
func agentReplicas(t *testing.T) (a, b *process) {
	t.Helper()
	redis := redistest.Start(t)
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	body := `auth: {anonymous: {}}
server: {internal: {addr: "127.0.0.1:0"}}
state:
  backend: redis
  redis: {addrs: ["` + redis.Addr + `"], key_prefix: "` + redis.Prefix(t) + `"}
nekte: {}
mcp_face: {tools_changed_delay: 50ms}
agents:
  heartbeat_interval: 200ms
  missed_heartbeats: 3
  auth: {allow_loopback_anonymous: true}
`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return startProcess(t, cfg), startProcess(t, cfg)
}

// TestAgentOnReplicaServesCallsThroughAnother connects a real agent to replica A only and
// calls its operators through replica B: results come back unchanged, the agent's own
// failures keep their codes, and once A is killed mid-task the call through B fails with
// AGENT_GONE at once, and later calls with NO_AGENT once A's registry entries lapse.
func TestAgentOnReplicaServesCallsThroughAnother(t *testing.T) {
	a, b := agentReplicas(t)
	startAgent(t, a.internal, "remote-worker", true)
	capsWith(t, a, "agent.sha256")

	var r rpcResult
	waitFor(t, func() bool {
		r = b.rpcCall(t, "", "agent.sha256", `{"text":"hello"}`)
		return errorCode(r) == 0
	})
	for _, want := range []string{`"agent":"remote-worker"`, `"sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"`} {
		if !strings.Contains(r.body, want) {
			t.Fatalf("agent.sha256 through replica B lacks %s: %s", want, r.body)
		}
	}
	// The serving replica checks the input against the operator's schema: INVALID_PARAMS
	// with its data, unchanged through B.
	r = b.rpcCall(t, "", "agent.matmul", `{"a":"not a matrix"}`)
	if errorCode(r) != -32602 || !strings.Contains(r.body, `"operator":"matmul"`) {
		t.Fatalf("a bad input through replica B: %s", r.body)
	}
	if got := a.metricSum(t, "gatehouse_agents_connected"); got != 1 {
		t.Errorf("gatehouse_agents_connected on A = %v, want 1", got)
	}
	if got := b.metricSum(t, "gatehouse_agents_connected"); got != 0 {
		t.Errorf("gatehouse_agents_connected on B = %v, want 0", got)
	}

	// A killed mid-task: the call through B fails explicitly, never hangs.
	done := make(chan rpcResult, 1)
	go func() { done <- b.rpcCall(t, "", "agent.sleep", `{"ms":60000}`) }()
	waitFor(t, func() bool { return a.metricSum(t, "gatehouse_agent_tasks_outstanding") == 1 })
	a.kill(t)
	select {
	case r = <-done:
		if errorCode(r) != 1005 || !strings.Contains(r.body, "CALL_AGAIN_IF_IDEMPOTENT") {
			t.Fatalf("the task of a killed replica: %s", r.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call through B did not end after the serving replica was killed")
	}
	// A's registry entries lapse within k intervals (600ms): NO_AGENT, not a hang.
	waitFor(t, func() bool {
		r = b.rpcCall(t, "", "agent.sha256", `{"text":"hello"}`)
		return errorCode(r) == 1006
	})
	if !strings.Contains(r.body, "WAIT_FOR_AN_AGENT_THEN_DISCOVER") {
		t.Fatalf("after the serving replica died: %s", r.body)
	}
}

// TestRemoteAgentOperatorsInEveryCatalog connects a real agent to replica A only: replica
// B's catalog lists its operators (nekte.discover, rpc.discover, MCP tools/list), once,
// and nekte.invoke and MCP tools/call on B run them on A's agent. An MCP session on B is
// sent notifications/tools/list_changed when the agent connects to A and when it leaves,
// and the operators leave B's catalog with it.
func TestRemoteAgentOperatorsInEveryCatalog(t *testing.T) {
	a, b := agentReplicas(t)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli, err := client.NewStreamableHttpClient(strings.TrimSuffix(b.rpc, "/rpc") + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	var changed atomic.Int32
	cli.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationToolsListChanged {
			changed.Add(1)
		}
	})
	if err := cli.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20260728
	init.Params.ClientInfo = mcp.Implementation{Name: "replicas-test", Version: "1"}
	if _, err := cli.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	stopListen, err := cli.ListenAsync(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, func(err error) { t.Errorf("subscriptions/listen: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	defer stopListen()
	listTools := func() map[string]mcp.Tool {
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
	if _, ok := listTools()["agent.sha256"]; ok {
		t.Fatal("agent.sha256 is a tool on B before any agent connected")
	}
	// Let the listen stream open before the change it must see.
	time.Sleep(300 * time.Millisecond)
	before := changed.Load()

	agent := startAgent(t, a.internal, "far-worker", true, "--reconnect=false")
	capsWith(t, a, "agent.sha256")
	// B lists A's operators: nekte.discover (once), the OpenRPC document.
	body := capsWith(t, b, "agent.sha256", "agent.matmul", "agent.sleep")
	if n := strings.Count(body, `"agent.sha256"`); n != 1 {
		t.Fatalf("nekte.discover on B lists agent.sha256 %d times: %s", n, body)
	}
	if r := b.rpcCall(t, "", "nekte.discover", `{"level":1,"filter":{"category":"agent"}}`); !strings.Contains(r.body, "far-worker") {
		t.Errorf("nekte.discover on B does not name the agent: %s", r.body)
	}
	if r := b.rpcCall(t, "", "rpc.discover", `{}`); !strings.Contains(r.body, `"agent.sha256"`) {
		t.Errorf("rpc.discover on B lacks agent.sha256: %s", r.body)
	}
	// The MCP session on B was told its tools changed, and lists them.
	waitFor(t, func() bool { return changed.Load() > before })
	tool, ok := listTools()["agent.sha256"]
	if !ok || len(tool.InputSchema.Properties) == 0 {
		t.Fatalf("tools/list on B: agent.sha256 %v, %+v", ok, tool)
	}

	// nekte.invoke on B runs the operator on A's agent.
	r := b.rpcCall(t, "", "nekte.invoke", `{"cap":"agent.sha256","in":{"text":"hello"}}`)
	if errorCode(r) != 0 || !strings.Contains(r.body, `"agent":"far-worker"`) ||
		!strings.Contains(r.body, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824") {
		t.Fatalf("nekte.invoke of agent.sha256 on B: %s", r.body)
	}
	// MCP tools/call on B too.
	req := mcp.CallToolRequest{}
	req.Params.Name = "agent.sha256"
	req.Params.Arguments = map[string]any{"text": "hello"}
	res, err := cli.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("tools/call agent.sha256 on B: %+v, %v", res, err)
	}
	var sc struct{ Agent string }
	raw, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(raw, &sc) != nil || sc.Agent != "far-worker" {
		t.Fatalf("tools/call agent.sha256 on B: %s", raw)
	}

	// The agent leaves A: B's session is told, and the operators leave B's catalog.
	mid := changed.Load()
	_ = agent.cmd.Process.Signal(syscall.SIGKILL)
	waitFor(t, func() bool { return changed.Load() > mid })
	waitFor(t, func() bool { _, ok := listTools()["agent.sha256"]; return !ok })
	if r := b.rpcCall(t, "", "nekte.discover", `{"level":0,"filter":{"category":"agent"}}`); strings.Contains(r.body, `"agent.sha256"`) {
		t.Fatalf("nekte.discover on B still lists agent.sha256: %s", r.body)
	}
}

// TestRemoteAgentsProgressAndRedundancy: the progress reports of an agent on replica A
// reach an MCP caller on replica B as notifications/progress, and a redundant call on B
// runs on distinct agents of both replicas; more runs than agents anywhere is NO_AGENT
// with the counts and a recovery hint.
func TestRemoteAgentsProgressAndRedundancy(t *testing.T) {
	a, b := agentReplicas(t)
	startAgent(t, a.internal, "ra", true)
	capsWith(t, b, "agent.sleep")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli, err := client.NewStreamableHttpClient(strings.TrimSuffix(b.rpc, "/rpc") + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	var progress atomic.Int32
	cli.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" && n.Params.AdditionalFields["progressToken"] == "far-7" {
			progress.Add(1)
		}
	})
	if err := cli.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcp.Implementation{Name: "replicas-test", Version: "1"}
	if _, err := cli.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "agent.sleep"
	req.Params.Arguments = map[string]any{"ms": 300, "steps": 3}
	req.Params.Meta = &mcp.Meta{ProgressToken: "far-7"}
	res, err := cli.CallTool(ctx, req)
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(mcp.TextContent).Text, `"agent":"ra"`) {
		t.Fatalf("agent.sleep through B: %+v, %v", res, err)
	}
	waitFor(t, func() bool { return progress.Load() >= 2 })

	// One agent on each replica: k = 2 through B runs on both.
	startAgent(t, b.internal, "rb", true)
	var r rpcResult
	waitFor(t, func() bool {
		r = b.rpcCall(t, "", "agent.sha256", `{"text":"hello","redundancy":2}`)
		return errorCode(r) == 0
	})
	var out struct {
		Runs []struct {
			Agent  string
			Output struct{ SHA256 string }
		}
	}
	if err := json.Unmarshal(r.reply.Result, &out); err != nil || len(out.Runs) != 2 {
		t.Fatalf("redundancy 2 through B: %s", r.body)
	}
	agents := map[string]bool{}
	for _, run := range out.Runs {
		agents[run.Agent] = true
		if run.Output.SHA256 != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
			t.Fatalf("a run through B: %s", r.body)
		}
	}
	if !agents["ra"] || !agents["rb"] {
		t.Fatalf("redundancy 2 through B ran on %v, want ra and rb: %s", agents, r.body)
	}
	r = b.rpcCall(t, "", "agent.sha256", `{"text":"hello","redundancy":3}`)
	if errorCode(r) != 1006 || !strings.Contains(r.body, `"offered":2`) || !strings.Contains(r.body, `"wanted":3`) ||
		!strings.Contains(r.body, "WAIT_FOR_AN_AGENT_THEN_DISCOVER") {
		t.Fatalf("redundancy 3 with 2 agents on the replicas: %s", r.body)
	}
}
