package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
