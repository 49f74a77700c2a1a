package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// agentObsConfig: the agent link with heartbeats (an agent lapses after 2s of silence, well
// above a loaded machine's scheduling delays), a dispatch timeout an answering agent meets
// on a loaded machine, every call in the access log, and tracing to an in-memory exporter.
const agentObsConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  internal: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  anonymous: {}
agents:
  heartbeat_interval: 250ms
  missed_heartbeats: 8
  dispatch_timeout: 2s
  auth: {allow_loopback_anonymous: true}
log: {level: debug, access: {enabled: true, sample_ratio: 1}}
tracing: {export_interval: 10ms}
`

// runDemoAgent runs the reference agent (package demo) against ts's internal listener until
// the test ends, and waits until it is connected.
func runDemoAgent(t *testing.T, ts *testServer, id string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = demo.RunAgent(ctx, demo.AgentOptions{Addr: ts.InternalAddr().String(), ID: id, Logger: slog.New(slog.DiscardHandler)})
	}()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for len(ts.agents.Agents()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the agent did not connect")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAgentObservability: a call dispatched to an agent is counted by operator and outcome,
// the agent's heartbeat gaps fill the histogram, its outstanding tasks and presence are
// gauges, the call's span has a dispatch span under it, the access line names the agent,
// and /readyz lists it (informationally: the status stays ready).
func TestAgentObservability(t *testing.T) {
	ts, exp := startTraced(t, agentObsConfig)
	runDemoAgent(t, ts, "obs-1")

	for _, tc := range []struct {
		params, outcome string
		code            int
	}{
		{`{"text":"hello"}`, "ok", 0},
		{`{"ms":60000}`, "timeout", 1004}, // the agent stops at the task's timeout
	} {
		method := "agent.sha256"
		if tc.outcome == "timeout" {
			method = "agent.sleep"
		}
		_, _, body := ts.post(`{"jsonrpc":"2.0","method":"` + method + `","params":` + tc.params + `,"id":1}`)
		if tc.code == 0 && !strings.Contains(body, `"agent":"obs-1"`) || tc.code != 0 && !strings.Contains(body, fmt.Sprintf(`"code":%d`, tc.code)) {
			t.Fatalf("%s: %s", method, body)
		}
	}
	m := ts.scrape()
	for series, want := range map[string]float64{
		`gatehouse_agent_tasks_total{operator="sha256",outcome="ok"}`:     1,
		`gatehouse_agent_tasks_total{operator="sleep",outcome="timeout"}`: 1,
		`gatehouse_agents_connected{}`:                                    1,
		`gatehouse_agent_tasks_outstanding{agent="obs-1"}`:                0,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if n := m["gatehouse_agent_heartbeat_gap_seconds_count{}"]; n < 1 {
		t.Errorf("gatehouse_agent_heartbeat_gap_seconds_count{} = %v, want heartbeats observed", n)
	}

	spans := ts.spansWhen(exp, func(s tracetest.SpanStubs) bool {
		n := 0
		for _, sp := range s {
			if sp.Name == "agentlink.dispatch" {
				n++
			}
		}
		return n == 2
	})
	byID := map[string]tracetest.SpanStub{}
	for _, sp := range spans {
		byID[sp.SpanContext.SpanID().String()] = sp
	}
	outcomes := map[string]bool{}
	for _, sp := range spans {
		if sp.Name != "agentlink.dispatch" {
			continue
		}
		if !containsAttr(sp.Attributes, "gatehouse.agent.id", "obs-1") || !hasAttr(sp, "gatehouse.agent.task_id") {
			t.Errorf("dispatch span attributes %v", sp.Attributes)
		}
		for _, kv := range sp.Attributes {
			if kv.Key == "gatehouse.agent.outcome" {
				outcomes[kv.Value.AsString()] = true
			}
		}
		parent, ok := byID[sp.Parent.SpanID().String()]
		if !ok || sp.Parent.TraceID() != sp.SpanContext.TraceID() {
			t.Errorf("the dispatch span has no exported parent in its trace")
		} else if !strings.Contains(parent.Name, "agent.") {
			t.Errorf("the dispatch span's parent is %q, not the call's span", parent.Name)
		}
	}
	if !outcomes["ok"] || !outcomes["timeout"] {
		t.Errorf("dispatch span outcomes %v, want ok and timeout", outcomes)
	}

	logs := ts.logs.String()
	if !strings.Contains(logs, "msg=access method=agent.sha256") || !strings.Contains(logs, "agent=obs-1") {
		t.Errorf("no access line naming the agent:\n%s", logs)
	}

	resp, err := http.Get(ts.admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var ready struct {
		Status string `json:"status"`
		Agents []struct {
			ID        string   `json:"id"`
			Operators []string `json:"operators"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(raw, &ready); err != nil || resp.StatusCode != http.StatusOK || ready.Status != "ready" ||
		len(ready.Agents) != 1 || ready.Agents[0].ID != "obs-1" || len(ready.Agents[0].Operators) == 0 {
		t.Fatalf("/readyz %d: %s", resp.StatusCode, raw)
	}
}

// TestReadyzWithoutAgentsStaysReady: the agents list is informational; a gateway with the
// agent link and no agent is ready, and says so with an empty list.
func TestReadyzWithoutAgentsStaysReady(t *testing.T) {
	ts := start(t, agentObsConfig, nil)
	resp, err := http.Get(ts.admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"agents":[]`) {
		t.Fatalf("/readyz %d: %s", resp.StatusCode, raw)
	}
}

func hasAttr(sp tracetest.SpanStub, key string) bool {
	for _, kv := range sp.Attributes {
		if string(kv.Key) == key {
			return true
		}
	}
	return false
}
