package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// agentGatewayConfig serves NEKTE, anonymous callers and the agent link (loopback agents
// without a credential) with fast heartbeats; extra is appended under agents.
func agentGatewayConfig(t *testing.T, extra string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	body := `auth: {anonymous: {}}
server: {internal: {addr: "127.0.0.1:0"}}
nekte: {}
agents:
  heartbeat_interval: 200ms
  missed_heartbeats: 3
  auth: {allow_loopback_anonymous: true}
` + extra
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// agentProcess is one `gatehouse demo-agent` process.
type agentProcess struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan error
}

// startAgent runs `gatehouse demo-agent --connect addr --id id` with args and, unless
// wait is false, waits until it is connected.
func startAgent(t *testing.T, addr, id string, wait bool, args ...string) *agentProcess {
	t.Helper()
	a := &agentProcess{cmd: exec.Command(binary, append([]string{"demo-agent", "--connect", addr, "--id", id}, args...)...),
		stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	a.cmd.Stderr = a.stderr
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.exited <- a.cmd.Wait() }()
	t.Cleanup(func() {
		_ = a.cmd.Process.Kill()
		<-a.exited
		a.exited <- nil
		if t.Failed() {
			t.Logf("agent %s stderr:\n%s", id, a.stderr.String())
		}
	})
	if wait {
		waitFor(t, func() bool { return strings.Contains(a.stderr.String(), "msg=connected") })
	}
	return a
}

// exit waits for the agent process to end and returns its exit code and stderr.
func (a *agentProcess) exit(t *testing.T) (int, string) {
	t.Helper()
	select {
	case err := <-a.exited:
		a.exited <- err
		code := 0
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			code = ee.ExitCode()
		}
		return code, a.stderr.String()
	case <-time.After(20 * time.Second):
		t.Fatalf("the agent did not exit:\n%s", a.stderr.String())
		return 0, ""
	}
}

// capsWith waits until nekte.discover lists every id in want among the agent capabilities
// and returns the agents named in their descriptions.
func capsWith(t *testing.T, p *process, want ...string) string {
	t.Helper()
	var body string
	waitFor(t, func() bool {
		body = p.rpcCall(t, "", "nekte.discover", `{"level":0,"filter":{"category":"agent"}}`).body
		for _, id := range want {
			if !strings.Contains(body, `"`+id+`"`) {
				return false
			}
		}
		return true
	})
	return body
}

func errorCode(r rpcResult) int {
	if r.reply.Error == nil {
		return 0
	}
	return r.reply.Error.Code
}

func TestAgentsServeCallsFromSeveralProcesses(t *testing.T) {
	p := startProcess(t, agentGatewayConfig(t, ""))
	for _, id := range []string{"a1", "a2", "a3"} {
		startAgent(t, p.internal, id, true)
	}
	capsWith(t, p, "agent.sha256", "agent.matmul", "agent.sleep")
	l1 := p.rpcCall(t, "", "nekte.discover", `{"level":1,"filter":{"id":"agent.sha256"}}`).body
	if !strings.Contains(l1, "a1, a2, a3") {
		t.Errorf("discover L1 does not name the three agents: %s", l1)
	}

	r := p.rpcCall(t, "", "nekte.invoke", `{"cap":"agent.sha256","in":{"text":"hello"}}`)
	if !strings.Contains(r.body, `"sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"`) {
		t.Fatalf("nekte.invoke: %s", r.body)
	}
	r = p.rpcCall(t, "", "agent.matmul", `{"a":[[1,2],[3,4]],"b":[[5],[6]]}`)
	var res struct {
		Agent  string
		Output struct{ C [][]float64 }
	}
	if err := json.Unmarshal(r.reply.Result, &res); err != nil || fmt.Sprint(res.Output.C) != "[[17] [39]]" || res.Agent == "" {
		t.Fatalf("agent.matmul: %s", r.body)
	}
	// Failures are outcomes: the agent's failure, an input the schema refuses (no agent sees
	// it), an operator no agent offers.
	if r := p.rpcCall(t, "", "agent.matmul", `{"a":[[1,2]],"b":[[1]]}`); errorCode(r) != 1003 ||
		!strings.Contains(r.body, "a has 2 columns but b has 1 rows") || !strings.Contains(r.body, `"recovery_hint"`) {
		t.Fatalf("execution failure: %s", r.body)
	}
	if r := p.rpcCall(t, "", "nekte.invoke", `{"cap":"agent.matmul","in":{"a":"x"}}`); errorCode(r) != -32602 {
		t.Fatalf("invalid input: %s", r.body)
	}
	if r := p.rpcCall(t, "", "agent.nope", `{}`); errorCode(r) != 1006 {
		t.Fatalf("no agent: %s", r.body)
	}
	// Redundant execution: the same task on three distinct agents, every result returned.
	r = p.rpcCall(t, "", "agent.sha256", `{"text":"hello","redundancy":3}`)
	var red struct {
		Runs []struct {
			Agent  string
			Output struct{ SHA256 string }
		}
	}
	if err := json.Unmarshal(r.reply.Result, &red); err != nil || len(red.Runs) != 3 {
		t.Fatalf("redundancy 3: %s", r.body)
	}
	ran := map[string]bool{}
	for _, run := range red.Runs {
		ran[run.Agent] = true
		if run.Output.SHA256 != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
			t.Errorf("run on %s: %s", run.Agent, r.body)
		}
	}
	if len(ran) != 3 {
		t.Errorf("redundant runs on %v, want three distinct agents", ran)
	}
	if r := p.rpcCall(t, "", "agent.sha256", `{"text":"hello","redundancy":4}`); errorCode(r) != 1006 || !strings.Contains(r.body, `"offered":3`) {
		t.Errorf("redundancy 4 of 3 agents: %s", r.body)
	}
	// Concurrent tasks spread over the agents (least outstanding tasks first).
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			r := p.rpcCall(t, "", "agent.sleep", `{"ms":300}`)
			var res struct{ Agent string }
			_ = json.Unmarshal(r.reply.Result, &res)
			mu.Lock()
			seen[res.Agent]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(seen) != 3 || seen[""] != 0 {
		t.Errorf("12 concurrent tasks ran on %v, want all three agents and no failure", seen)
	}
}

func TestAgentRestartMidJob(t *testing.T) {
	p := startProcess(t, agentGatewayConfig(t, ""))
	a := startAgent(t, p.internal, "worker", true)
	capsWith(t, p, "agent.sleep")
	done := make(chan rpcResult, 1)
	go func() { done <- p.rpcCall(t, "", "agent.sleep", `{"ms":20000,"job_id":"job-7"}`) }()
	time.Sleep(500 * time.Millisecond) // the task is running on the agent
	killed := time.Now()
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	r := <-done
	if errorCode(r) != 1005 || !strings.Contains(r.body, `"job_id":"job-7"`) || !strings.Contains(r.body, `"agent":"worker"`) {
		t.Fatalf("a task on a killed agent: %s", r.body)
	}
	if took := time.Since(killed); took > 5*time.Second {
		t.Errorf("the task failed %v after its agent died", took)
	}
	startAgent(t, p.internal, "worker", true) // the same agent, restarted
	if r := p.rpcCall(t, "", "agent.sleep", `{"ms":10,"job_id":"job-7"}`); !strings.Contains(r.body, `"agent":"worker"`) || errorCode(r) != 0 {
		t.Fatalf("after the restart: %s", r.body)
	}
}

func TestAgentHeartbeatLossMidTask(t *testing.T) {
	p := startProcess(t, agentGatewayConfig(t, ""))
	startAgent(t, p.internal, "quiet", true, "--fault", "silent", "--reconnect=false")
	capsWith(t, p, "agent.sleep")
	start := time.Now()
	r := p.rpcCall(t, "", "agent.sleep", `{"ms":60000}`)
	took := time.Since(start)
	if errorCode(r) != 1005 || !strings.Contains(r.body, "heartbeat intervals") {
		t.Fatalf("a silent agent's task: %s", r.body)
	}
	// k intervals = 600ms after its last message; the slack is for a loaded machine.
	if took > 5*time.Second {
		t.Errorf("the task failed %v after dispatch, want about 600ms", took)
	}
}

func TestAgentVersionRejected(t *testing.T) {
	p := startProcess(t, agentGatewayConfig(t, ""))
	a := startAgent(t, p.internal, "future", false, "--version", "2.0.0", "--version", "1.1.0", "--reconnect=false")
	code, stderr := a.exit(t)
	if code != 1 || !strings.Contains(stderr, "the gateway speaks 1.0.0") || !strings.Contains(stderr, "the agent offers 2.0.0, 1.1.0") {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
}

func TestAgentDuplicateAndLateResults(t *testing.T) {
	p := startProcess(t, agentGatewayConfig(t, "  dispatch_timeout: 1s\n"))
	dup := startAgent(t, p.internal, "dup", true, "--fault", "duplicate", "--reconnect=false")
	capsWith(t, p, "agent.sha256")
	for i := range 3 {
		if r := p.rpcCall(t, "", "agent.sha256", `{"text":"x"}`); errorCode(r) != 0 || !strings.Contains(r.body, `"agent":"dup"`) {
			t.Fatalf("call %d with duplicate results: %s", i, r.body)
		}
	}
	_ = dup.cmd.Process.Kill()
	waitFor(t, func() bool {
		return !strings.Contains(p.rpcCall(t, "", "nekte.discover", `{"level":0}`).body, "agent.sha256")
	})
	late := startAgent(t, p.internal, "late", true, "--fault", "late", "--reconnect=false")
	capsWith(t, p, "agent.sha256")
	for i := range 2 {
		if r := p.rpcCall(t, "", "agent.sha256", `{"text":"x"}`); errorCode(r) != 1004 {
			t.Fatalf("call %d answered late: %s", i, r.body)
		}
	}
	time.Sleep(300 * time.Millisecond) // the late results arrive and are ignored
	if strings.Contains(late.stderr.String(), "disconnected") {
		t.Fatalf("a late result disconnected the agent:\n%s", late.stderr.String())
	}
}

func TestMisbehavingAgentsLeaveOthersUnaffected(t *testing.T) {
	p := startProcess(t, agentGatewayConfig(t, "  max_frame_bytes: 4096\n  max_messages_per_second: 100\n"))
	startAgent(t, p.internal, "good", true)
	capsWith(t, p, "agent.sha256")
	for _, tt := range []struct{ fault, reason string }{
		{"unknown-result", "which it was never given"},
		{"oversized", "agents.max_frame_bytes"},
		{"flood", "messages per second"},
	} {
		t.Run(tt.fault, func(t *testing.T) {
			bad := startAgent(t, p.internal, "bad-"+tt.fault, false, "--fault", tt.fault, "--reconnect=false")
			code, stderr := bad.exit(t)
			if code != 1 || !strings.Contains(stderr, tt.reason) {
				t.Fatalf("exit %d, want a disconnect naming %q:\n%s", code, tt.reason, stderr)
			}
			for range 3 {
				if r := p.rpcCall(t, "", "agent.sha256", `{"text":"x"}`); errorCode(r) != 0 || !strings.Contains(r.body, `"agent":"good"`) {
					t.Fatalf("the good agent after %s: %s", tt.fault, r.body)
				}
			}
		})
	}
}
