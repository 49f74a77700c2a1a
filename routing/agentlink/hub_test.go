package agentlink_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	"github.com/gatehouse-dev/gatehouse/schemas"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

func TestRegisterAndDispatch(t *testing.T) {
	h, addr := startHub(t, fastConfig())
	a := connect(t, addr, "all", descriptor("a1"))
	w := a.welcome()
	if w.GetProtocolVersion() != "1.0.0" || w.GetHeartbeatIntervalMs() != 100 || w.GetMissedHeartbeats() != 3 || w.GetMaxFrameBytes() != agentlink.DefaultMaxFrameBytes {
		t.Fatalf("welcome = %v", w)
	}
	ops, gen := h.Operators()
	if len(ops) != 1 || ops[0].ID != "echo" || ops[0].Method != "agent.echo" || gen == 0 || len(ops[0].Agents) != 1 {
		t.Fatalf("operators = %+v (generation %d)", ops, gen)
	}
	a.serveEcho()
	o, err := h.Dispatch(context.Background(), agentlink.Task{Operator: "echo", Input: echoInput("hi"), JobID: "job-1"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Agent != "a1" || o.JobID != "job-1" || !strings.HasPrefix(o.TaskID, "job-1/") || string(o.Output) != `{"text":"hi"}` {
		t.Fatalf("outcome = %+v", o)
	}
}

func TestTaskIDsAreUniqueWithinAJob(t *testing.T) {
	h, addr := startHub(t, fastConfig())
	a := connect(t, addr, "all", descriptor("a1"))
	a.welcome()
	a.serveEcho()
	seen := map[string]bool{}
	for range 20 {
		o, err := h.Dispatch(context.Background(), agentlink.Task{Operator: "echo", Input: echoInput("x"), JobID: "j"})
		if err != nil {
			t.Fatal(err)
		}
		if seen[o.TaskID] {
			t.Fatalf("task id %q twice in one job", o.TaskID)
		}
		seen[o.TaskID] = true
	}
}

func TestVersionNegotiation(t *testing.T) {
	tests := []struct {
		name    string
		gateway []string
		agent   []string
		want    string // negotiated; "" for a rejection
		reason  []string
	}{
		{"same", []string{"1.0.0"}, []string{"1.0.0"}, "1.0.0", nil},
		{"patch is a clarification", []string{"1.0.0"}, []string{"1.0.7"}, "1.0.0", nil},
		{"highest common", []string{"1.0.0", "1.1.0"}, []string{"1.0.0", "1.1.2"}, "1.1.0", nil},
		{"no downgrade", []string{"1.0.0"}, []string{"1.1.0"}, "", []string{"the gateway speaks 1.0.0", "the agent offers 1.1.0"}},
		{"other major", []string{"1.0.0"}, []string{"2.0.0"}, "", []string{"1.0.0", "2.0.0"}},
		{"malformed", []string{"1.0.0"}, []string{"v1"}, "", []string{`"v1"`, "1.0.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastConfig()
			cfg.Versions = tt.gateway
			_, addr := startHub(t, cfg)
			d := descriptor("a1")
			d.ProtocolVersions = tt.agent
			a := connect(t, addr, "all", d)
			m := a.next()
			if tt.want != "" {
				if m.GetWelcome().GetProtocolVersion() != tt.want {
					t.Fatalf("got %v, want version %s", m, tt.want)
				}
				return
			}
			r := m.GetReject()
			if r == nil {
				t.Fatalf("got %v, want a reject", m)
			}
			for _, s := range tt.reason {
				if !strings.Contains(r.GetReason(), s) {
					t.Errorf("reason %q does not say %q", r.GetReason(), s)
				}
			}
			if len(r.GetGatewayVersions()) == 0 || len(r.GetAgentVersions()) == 0 {
				t.Errorf("reject %v does not list both sides' versions", r)
			}
			if st := status.Convert(a.endErr()); st.Code() == codes.OK {
				t.Errorf("stream ended with %v", st)
			}
		})
	}
}

func TestDescriptorValidation(t *testing.T) {
	big := strings.Repeat("x", 300)
	tests := []struct {
		name   string
		mutate func(d *agentlinkv1.NodeDescriptor)
		reason string
	}{
		{"bad agent id", func(d *agentlinkv1.NodeDescriptor) { d.AgentId = "a b" }, "agent_id"},
		{"no operators", func(d *agentlinkv1.NodeDescriptor) { d.Operators = nil }, "operators"},
		{"bad operator id", func(d *agentlinkv1.NodeDescriptor) { d.Operators[0].Id = "Echo!" }, "operator id"},
		{"long description", func(d *agentlinkv1.NodeDescriptor) { d.Operators[0].Description = big }, "description"},
		{"schema not JSON", func(d *agentlinkv1.NodeDescriptor) { d.Operators[0].InputSchemaJson = "{" }, "input schema"},
		{"schema not an object", func(d *agentlinkv1.NodeDescriptor) { d.Operators[0].InputSchemaJson = `{"type":"string"}` }, "input schema"},
		{"external ref", func(d *agentlinkv1.NodeDescriptor) {
			d.Operators[0].InputSchemaJson = `{"type":"object","$ref":"https://example.com/x.json"}`
		}, "input schema"},
		{"twice", func(d *agentlinkv1.NodeDescriptor) { d.Operators = append(d.Operators, echoOperator()) }, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, addr := startHub(t, fastConfig())
			d := descriptor("a1")
			tt.mutate(d)
			a := connect(t, addr, "all", d)
			r := a.next().GetReject()
			if r == nil || !strings.Contains(r.GetReason(), tt.reason) {
				t.Fatalf("reject = %v, want a reason naming %q", r, tt.reason)
			}
		})
	}
}

func TestAgentAuthentication(t *testing.T) {
	two := descriptor("a1", echoOperator(), &agentlinkv1.Operator{Id: "other", InputSchemaJson: `{"type":"object"}`})
	tests := []struct {
		name     string
		cfg      func(*agentlink.Config)
		token    string
		d        *agentlinkv1.NodeDescriptor
		wantCode codes.Code // OK: welcomed
	}{
		{"loopback anonymous allowed", nil, "", descriptor("a1"), codes.OK},
		{"anonymous refused", func(c *agentlink.Config) { c.Auth.AllowLoopbackAnonymous = false }, "", descriptor("a1"), codes.Unauthenticated},
		{"anonymous when no credential is required", func(c *agentlink.Config) {
			no := false
			c.Auth = agentlink.AuthConfig{RequireCredential: &no}
		}, "", descriptor("a1"), codes.OK},
		{"bad token never falls back to anonymous", nil, "forged", descriptor("a1"), codes.Unauthenticated},
		{"scope for the operator", nil, "echo", descriptor("a1"), codes.OK},
		{"scope for one operator of two", nil, "echo", two, codes.PermissionDenied},
		{"scope agent:serve", nil, "all", two, codes.OK},
		{"no agent scope", nil, "readonly", descriptor("a1"), codes.PermissionDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			_, addr := startHub(t, cfg)
			a := connect(t, addr, tt.token, tt.d)
			m := a.next()
			if tt.wantCode == codes.OK {
				if m.GetWelcome() == nil {
					t.Fatalf("got %v (%v), want a welcome", m, a.endErr())
				}
				return
			}
			if m.GetWelcome() != nil {
				t.Fatal("welcomed, want refused")
			}
			if got := status.Code(a.endErr()); got != tt.wantCode {
				t.Fatalf("code = %v, want %v", got, tt.wantCode)
			}
		})
	}
}

func TestFailuresAreOutcomes(t *testing.T) {
	tests := []struct {
		name  string
		agent func(a *testAgent, d *agentlinkv1.TaskDispatch)
		code  schemas.Code
		data  map[string]any
	}{
		{"rejected", func(a *testAgent, d *agentlinkv1.TaskDispatch) { a.ack(d.GetTaskId(), false, "no GPU free") },
			schemas.CodeAgentRejected, map[string]any{"reason": "no GPU free", "recovery_hint": agentlink.HintTryAnotherAgent, "agent": "a1"}},
		{"failed", func(a *testAgent, d *agentlinkv1.TaskDispatch) {
			a.ack(d.GetTaskId(), true, "")
			a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_FAILED, "", "division by zero")
		}, schemas.CodeAgentTaskFailed, map[string]any{"diagnostics": "division by zero", "recovery_hint": agentlink.HintCheckDiagnostics}},
		{"output breaks its schema", func(a *testAgent, d *agentlinkv1.TaskDispatch) {
			a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, `{"text":5}`, "")
		}, schemas.CodeAgentTaskFailed, map[string]any{"recovery_hint": agentlink.HintCheckDiagnostics}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, addr := startHub(t, fastConfig())
			a := connect(t, addr, "all", descriptor("a1"))
			a.welcome()
			res := dispatchAsync(h, agentlink.Task{Operator: "echo", Input: echoInput("x")})
			tt.agent(a, a.dispatched())
			r := <-res
			data := wantCode(t, r.err, tt.code)
			for k, v := range tt.data {
				if data[k] != v {
					t.Errorf("data.%s = %v, want %v", k, data[k], v)
				}
			}
			if data["task_id"] == "" || data["operator"] != "echo" {
				t.Errorf("data = %v lacks the task", data)
			}
		})
	}
}

func TestTimeoutThenLateResultIgnored(t *testing.T) {
	h, addr := startHub(t, fastConfig())
	a := connect(t, addr, "all", descriptor("a1"))
	a.welcome()
	res := dispatchAsync(h, agentlink.Task{Operator: "echo", Input: echoInput("x"), Timeout: 100 * time.Millisecond})
	d := a.dispatched()
	a.ack(d.GetTaskId(), true, "")
	r := <-res
	data := wantCode(t, r.err, schemas.CodeAgentTimeout)
	if data["recovery_hint"] != agentlink.HintLongerTimeout || data["timeout_ms"] != int64(100) {
		t.Errorf("data = %v", data)
	}
	if c := a.next().GetCancel(); c.GetTaskId() != d.GetTaskId() {
		t.Fatalf("want a cancel of %s, got %v", d.GetTaskId(), c)
	}
	// The late result and a duplicate are accepted and ignored: the agent stays connected.
	a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, `{"text":"x"}`, "")
	a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, `{"text":"x"}`, "")
	a.serveEcho()
	if _, err := h.Dispatch(context.Background(), agentlink.Task{Operator: "echo", Input: echoInput("y")}); err != nil {
		t.Fatalf("after a late result: %v", err)
	}
}

// TestFailureAtTheAgentsDeadlineIsATimeout: an agent that stops a task at the deadline it
// was sent (its receipt of the dispatch plus timeout_ms) and reports the failure then gets
// the task ended as a timeout (1004), not a failure (1003), even when the caller's timeout
// is not a whole number of milliseconds (the agent is sent it rounded down).
func TestFailureAtTheAgentsDeadlineIsATimeout(t *testing.T) {
	for i := range 10 {
		h, addr := startHub(t, fastConfig())
		a := connect(t, addr, "all", descriptor("a1"))
		a.welcome()
		res := dispatchAsync(h, agentlink.Task{Operator: "echo", Input: echoInput("x"), Timeout: 100*time.Millisecond + 999*time.Microsecond})
		d := a.dispatched()
		received := time.Now()
		a.ack(d.GetTaskId(), true, "")
		time.Sleep(time.Until(received.Add(time.Duration(d.GetTimeoutMs()) * time.Millisecond)))
		a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_FAILED, "", "context deadline exceeded")
		r := <-res
		if data := wantCode(t, r.err, schemas.CodeAgentTimeout); data["timeout_ms"] != int64(100) {
			t.Fatalf("task %d: data = %v", i, data)
		}
	}
}

func TestDuplicateResultKeepsTheFirst(t *testing.T) {
	h, addr := startHub(t, fastConfig())
	a := connect(t, addr, "all", descriptor("a1"))
	a.welcome()
	res := dispatchAsync(h, agentlink.Task{Operator: "echo", Input: echoInput("x")})
	d := a.dispatched()
	a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, `{"text":"first"}`, "")
	a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, `{"text":"second"}`, "")
	a.ack(d.GetTaskId(), true, "") // a late acknowledgement, too
	r := <-res
	if r.err != nil || string(r.o.Output) != `{"text":"first"}` {
		t.Fatalf("outcome = %+v, %v; want the first result", r.o, r.err)
	}
	a.serveEcho()
	if _, err := h.Dispatch(context.Background(), agentlink.Task{Operator: "echo", Input: echoInput("y")}); err != nil {
		t.Fatalf("the duplicate disconnected the agent: %v", err)
	}
}

func TestSilentAgentFailsItsTasksWithinKIntervals(t *testing.T) {
	cfg := fastConfig()
	h, addr := startHub(t, cfg)
	a := connect(t, addr, "all", descriptor("a1"))
	a.welcome()
	res := dispatchAsync(h, agentlink.Task{Operator: "echo", Input: echoInput("x")})
	d := a.dispatched()
	a.ack(d.GetTaskId(), true, "")
	acked := time.Now()
	// The agent now says nothing more.
	r := <-res
	took := time.Since(acked)
	data := wantCode(t, r.err, schemas.CodeAgentGone)
	if data["recovery_hint"] != agentlink.HintAgentGone || !strings.Contains(data["reason"].(string), "heartbeat") {
		t.Errorf("data = %v", data)
	}
	k := time.Duration(cfg.MissedHeartbeats) * cfg.HeartbeatInterval
	// Measured from the agent's last message; the slack is for a loaded test machine.
	if took > k+2*time.Second {
		t.Errorf("the task failed %v after the agent's last message, want about %v", took, k)
	}
	if m := a.next(); m.GetDisconnect() == nil {
		t.Errorf("want a disconnect, got %v", m)
	}
	if len(h.Agents()) != 0 {
		t.Errorf("the silent agent is still registered")
	}
}

func TestHeartbeatsKeepAnIdleAgent(t *testing.T) {
	// The silence an agent is allowed (1.5s) is well above a loaded machine's scheduling
	// delays; the test watches for twice that, so an agent whose heartbeats did not count
	// would be dropped within it.
	cfg := fastConfig()
	cfg.MissedHeartbeats = 15
	h, addr := startHub(t, cfg)
	a := connect(t, addr, "all", descriptor("a1"))
	a.welcome()
	a.serveEcho() // answers the gateway's heartbeats, its only messages
	k := time.Duration(cfg.MissedHeartbeats) * cfg.HeartbeatInterval
	for end := time.Now().Add(2 * k); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if len(h.Agents()) != 1 {
			t.Fatal("an agent answering heartbeats was dropped")
		}
	}
}

func TestMisbehavingAgentIsDisconnectedOthersUnaffected(t *testing.T) {
	tests := []struct {
		name   string
		cfg    func(*agentlink.Config)
		act    func(a *testAgent)
		reason string
	}{
		{"result for a task it never got", nil, func(a *testAgent) {
			a.result("job-x/1", agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, `{}`, "")
		}, "never given"},
		{"ack for a task it never got", nil, func(a *testAgent) { a.ack("nope", true, "") }, "never given"},
		{"empty task id", nil, func(a *testAgent) { a.ack("", true, "") }, "task_id"},
		{"oversized frame", func(c *agentlink.Config) { c.MaxFrameBytes = 2048 }, func(a *testAgent) {
			a.result("t", agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, `"`+strings.Repeat("a", 4096)+`"`, "")
		}, "max_frame_bytes"},
		{"result without status", nil, func(a *testAgent) { a.result("t", agentlinkv1.TaskStatus_TASK_STATUS_UNSPECIFIED, "", "") }, "status"},
		{"output not JSON", nil, func(a *testAgent) { a.result("t", agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, "{", "") }, "JSON"},
		{"second descriptor", nil, func(a *testAgent) {
			a.send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_NodeDescriptor{NodeDescriptor: descriptor("a1")}})
		}, "second node descriptor"},
		{"empty message", nil, func(a *testAgent) { a.send(&agentlinkv1.ConnectRequest{}) }, "no member"},
		{"flood", func(c *agentlink.Config) { c.MaxMessagesPerSecond = 200 }, func(a *testAgent) {
			// Beats until the gateway ends the stream: however slowly a loaded machine lets
			// the test send, it outruns 200 a second (the cap is 60s of the limit).
			beat := &agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Heartbeat{Heartbeat: &agentlinkv1.Heartbeat{Sequence: 1}}}
			for range 60 * 200 {
				if a.stream.Send(beat) != nil {
					return
				}
			}
		}, "messages per second"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := steadyConfig() // the bad agent sends nothing until it misbehaves
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			h, addr := startHub(t, cfg)
			good := connect(t, addr, "all", descriptor("good"))
			good.welcome()
			good.serveEcho()
			bad := connect(t, addr, "all", descriptor("bad"))
			bad.welcome()
			// The bad agent holds a task when it misbehaves: the task fails explicitly.
			res := dispatchAsync(h, agentlink.Task{Operator: "echo", Input: echoInput("x"), AffinityKey: keyFor(t, h, "bad")})
			bad.dispatched()
			tt.act(bad)
			var disc *agentlinkv1.Disconnect
			for m := bad.next(); m != nil; m = bad.next() {
				if disc = m.GetDisconnect(); disc != nil {
					break
				}
			}
			if disc == nil || !strings.Contains(disc.GetReason(), tt.reason) {
				t.Fatalf("disconnect = %v, want a reason naming %q", disc, tt.reason)
			}
			wantCode(t, (<-res).err, schemas.CodeAgentGone)
			waitAgents(t, h, 1)
			for range 5 {
				o, err := h.Dispatch(context.Background(), agentlink.Task{Operator: "echo", Input: echoInput("x")})
				if err != nil || o.Agent != "good" {
					t.Fatalf("the other agent: %+v, %v", o, err)
				}
			}
		})
	}
}

// keyFor finds an affinity key that sends tasks to agent id.
func keyFor(t *testing.T, h *agentlink.Hub, id string) string {
	t.Helper()
	// Rendezvous hashing is deterministic: probe keys with a task the agents answer.
	for i := range 1000 {
		key := "k" + string(rune('a'+i%26)) + strings.Repeat("z", i/26)
		if agentlink.AffinityOwner(h, "echo", key) == id {
			return key
		}
	}
	t.Fatalf("no key maps to %s", id)
	return ""
}

func TestAffinityAndLeastOutstanding(t *testing.T) {
	h, addr := startHub(t, fastConfig())
	for _, id := range []string{"a1", "a2", "a3"} {
		a := connect(t, addr, "all", descriptor(id))
		a.welcome()
		a.serveEcho()
	}
	key := keyFor(t, h, "a2")
	for range 10 {
		o, err := h.Dispatch(context.Background(), agentlink.Task{Operator: "echo", Input: echoInput("x"), AffinityKey: key})
		if err != nil || o.Agent != "a2" {
			t.Fatalf("affinity: %+v, %v; want a2", o, err)
		}
	}
	seen := map[string]bool{}
	for range 30 {
		o, err := h.Dispatch(context.Background(), agentlink.Task{Operator: "echo", Input: echoInput("x")})
		if err != nil {
			t.Fatal(err)
		}
		seen[o.Agent] = true
	}
	if len(seen) != 3 {
		t.Errorf("equally idle agents served %v, want all three", seen)
	}
}

func TestConcurrencyLimitAndNoAgent(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxConcurrentTasks = 1
	h, addr := startHub(t, cfg)
	wantCode(t, dispatchErr(h, agentlink.Task{Operator: "echo", Input: echoInput("x")}), schemas.CodeNoAgent)
	a := connect(t, addr, "all", descriptor("a1"))
	if w := a.welcome(); w.GetMaxConcurrentTasks() != 1 {
		t.Fatalf("welcome %v", w)
	}
	res := dispatchAsync(h, agentlink.Task{Operator: "echo", Input: echoInput("x")})
	d := a.dispatched()
	data := wantCode(t, dispatchErr(h, agentlink.Task{Operator: "echo", Input: echoInput("x")}), schemas.CodeOverloaded)
	if data["recovery_hint"] != agentlink.HintBusy || data["retry_after_ms"] == nil {
		t.Errorf("data = %v", data)
	}
	a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, `{"text":"x"}`, "")
	if r := <-res; r.err != nil {
		t.Fatal(r.err)
	}
	data = wantCode(t, dispatchErr(h, agentlink.Task{Operator: "nope"}), schemas.CodeNoAgent)
	if data["recovery_hint"] != agentlink.HintWaitForAgent {
		t.Errorf("data = %v", data)
	}
}

func dispatchErr(h *agentlink.Hub, task agentlink.Task) error {
	_, err := h.Dispatch(context.Background(), task)
	return err
}

func TestInvalidInputNeverReachesAnAgent(t *testing.T) {
	h, addr := startHub(t, fastConfig())
	a := connect(t, addr, "all", descriptor("a1"))
	a.welcome()
	data := wantCode(t, dispatchErr(h, agentlink.Task{Operator: "echo", Input: json.RawMessage(`{"text":1}`)}), schemas.CodeInvalidParams)
	if data["path"] != "/text" || data["keyword"] != "type" {
		t.Errorf("data = %v", data)
	}
	select {
	case m := <-a.in:
		if m.GetDispatch() != nil {
			t.Fatal("the agent was sent an invalid input")
		}
	case <-time.After(100 * time.Millisecond):
	}
}

func TestCallerGivesUpCancelsTheTask(t *testing.T) {
	h, addr := startHub(t, fastConfig())
	a := connect(t, addr, "all", descriptor("a1"))
	a.welcome()
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() {
		_, err := h.Dispatch(ctx, agentlink.Task{Operator: "echo", Input: echoInput("x")})
		res <- err
	}()
	d := a.dispatched()
	cancel()
	wantCode(t, <-res, schemas.CodeCancelled)
	if c := a.next().GetCancel(); c.GetTaskId() != d.GetTaskId() {
		t.Fatalf("want a cancel, got %v", c)
	}
}

func TestDuplicateAgentIDAndConflictingSchemas(t *testing.T) {
	_, addr := startHub(t, fastConfig())
	a := connect(t, addr, "all", descriptor("a1"))
	a.welcome()
	dup := connect(t, addr, "all", descriptor("a1"))
	if r := dup.next().GetReject(); r == nil || !strings.Contains(r.GetReason(), "connected already") {
		t.Fatalf("reject = %v", r)
	}
	other := echoOperator()
	other.InputSchemaJson = `{"type":"object"}`
	c := connect(t, addr, "all", descriptor("a2", other))
	if r := c.next().GetReject(); r == nil || !strings.Contains(r.GetReason(), "other schemas") {
		t.Fatalf("reject = %v", r)
	}
}

func TestTargetInvoke(t *testing.T) {
	h, addr := startHub(t, fastConfig())
	a := connect(t, addr, "all", descriptor("a1"))
	a.welcome()
	a.serveEcho()
	tg := h.Target()
	call := &gateway.Call{Method: "agent.echo", Params: []byte(`{"text":"hi","affinity_key":"k","job_id":"j1","data_refs":[{"uri":"https://example.com/x","name":"x"}]}`)}
	if !tg.NotRetryable(call) || tg.Backend(call) != "agent.echo" {
		t.Fatal("the target must be unretryable, one backend per operator")
	}
	res, err := tg.Invoke(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		TaskID, JobID, Agent string
		Output               map[string]string
	}
	if err := json.Unmarshal(res.Value, &got); err != nil {
		t.Fatal(err)
	}
	if got.Agent != "a1" || got.Output["text"] != "hi" || len(got.Output) != 1 {
		t.Fatalf("result %s", res.Value)
	}
	for _, p := range []string{`[1]`, `{"text":"x","data_refs":5}`, `{"text":"x","job_id":"a b"}`} {
		_, err := tg.Invoke(context.Background(), &gateway.Call{Method: "agent.echo", Params: []byte(p)})
		wantCode(t, err, schemas.CodeInvalidParams)
	}
}

func TestRefsTravelUntouchedWithoutDataURLs(t *testing.T) {
	h, addr := startHub(t, fastConfig())
	a := connect(t, addr, "all", descriptor("a1"))
	a.welcome()
	ref := agentlink.DataRef{URI: "https://example.com/blob", Name: "in", Size: 10, SHA256: strings.Repeat("ab", 32), Offset: 2, Length: 4}
	res := dispatchAsync(h, agentlink.Task{Operator: "echo", Input: echoInput("x"), Refs: []agentlink.DataRef{ref}})
	d := a.dispatched()
	want := &agentlinkv1.DataRef{Uri: ref.URI, Name: "in", SizeBytes: 10, Sha256: ref.SHA256, Range: &agentlinkv1.ByteRange{Offset: 2, Length: 4}}
	if len(d.GetInputRefs()) != 1 || !proto.Equal(d.GetInputRefs()[0], want) || d.GetOutputUpload() != nil {
		t.Fatalf("dispatch refs %v, want %v", d.GetInputRefs(), want)
	}
	out := &agentlinkv1.DataRef{Uri: "https://example.com/out", Name: "out", Headers: map[string]string{"authorization": "secret"}}
	a.send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Result{Result: &agentlinkv1.TaskResult{TaskId: d.GetTaskId(),
		Status: agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, OutputRefs: []*agentlinkv1.DataRef{out}}}})
	r := <-res
	if r.err != nil || len(r.o.Refs) != 1 || r.o.Refs[0].URI != out.GetUri() || r.o.Refs[0].Headers != nil {
		t.Fatalf("outcome %+v, %v", r.o, r.err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg  agentlink.Config
		want string
	}{
		{agentlink.Config{}, ""},
		{agentlink.Config{MissedHeartbeats: -1}, "missed_heartbeats"},
		{agentlink.Config{HeartbeatInterval: time.Millisecond}, "heartbeat_interval"},
		{agentlink.Config{Namespace: "agent"}, "namespace"},
		{agentlink.Config{Versions: []string{"1.0"}}, "versions"},
		{agentlink.Config{ForwardedProgressBuffer: -1}, "forwarded_progress_buffer"},
		{agentlink.Config{ForwardedProgressBuffer: 1}, ""},
		{agentlink.Config{Auth: agentlink.AuthConfig{TrustedScope: "agent:trusted gpu"}}, "trusted_scope"},
		{agentlink.Config{Auth: agentlink.AuthConfig{TrustedScope: agentlink.ScopeServe}}, "trusted_scope"},
		{agentlink.Config{Auth: agentlink.AuthConfig{TrustedScope: "agent:serve:echo"}}, "trusted_scope"},
		{agentlink.Config{Auth: agentlink.AuthConfig{TrustedScope: "gpu:trusted"}}, ""},
		{agentlink.Config{Auth: agentlink.AuthConfig{TrustedCertIdentities: []string{""}}}, "trusted_cert_identities"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
}

func TestCloseFailsTasksAndRefusesAgents(t *testing.T) {
	h, addr := startHub(t, fastConfig())
	a := connect(t, addr, "all", descriptor("a1"))
	a.welcome()
	res := dispatchAsync(h, agentlink.Task{Operator: "echo", Input: echoInput("x")})
	a.dispatched()
	_ = h.Close()
	wantCode(t, (<-res).err, schemas.CodeAgentGone)
	b := connect(t, addr, "all", descriptor("a2"))
	if r := b.next().GetReject(); r == nil || !strings.Contains(r.GetReason(), "shutting down") {
		t.Fatalf("reject = %v", r)
	}
}

func TestRedundantRunsOnDistinctAgents(t *testing.T) {
	h, addr := startHub(t, fastConfig())
	for _, id := range []string{"a1", "a2", "a3"} {
		a := connect(t, addr, "all", descriptor(id))
		a.welcome()
		if id == "a3" {
			go func() { // a3 refuses: its run says so, the others still succeed
				for m := range a.in {
					if d := m.GetDispatch(); d != nil {
						a.ack(d.GetTaskId(), false, "no")
					}
				}
			}()
			continue
		}
		a.serveEcho()
	}
	runs, err := h.DispatchRedundant(context.Background(), agentlink.Task{Operator: "echo", Input: echoInput("x"), JobID: "j"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	agents := map[string]bool{}
	for _, r := range runs {
		agents[r.Agent] = true
		switch r.Agent {
		case "a3":
			wantCode(t, r.Err, schemas.CodeAgentRejected)
		default:
			if r.Err != nil || string(r.Outcome.Output) != `{"text":"x"}` || r.Outcome.JobID != "j" {
				t.Errorf("run on %s: %+v, %v", r.Agent, r.Outcome, r.Err)
			}
		}
	}
	if len(agents) != 3 {
		t.Fatalf("runs on %v, want three distinct agents", agents)
	}
	data := wantCode(t, func() error {
		_, err := h.DispatchRedundant(context.Background(), agentlink.Task{Operator: "echo", Input: echoInput("x")}, 4)
		return err
	}(), schemas.CodeNoAgent)
	if data["offered"] != 3 || data["wanted"] != 4 {
		t.Errorf("data = %v", data)
	}
	res, err := h.Target().Invoke(context.Background(), &gateway.Call{Method: "agent.echo", Params: []byte(`{"text":"y","redundancy":2}`)})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		JobID string `json:"job_id"`
		Runs  []struct {
			Agent  string          `json:"agent"`
			Output json.RawMessage `json:"output"`
			Error  *struct{ Code int }
		} `json:"runs"`
	}
	if err := json.Unmarshal(res.Value, &got); err != nil || len(got.Runs) != 2 || got.Runs[0].Agent == got.Runs[1].Agent || got.JobID == "" {
		t.Fatalf("redundant result %s", res.Value)
	}
}

func TestProgressReachesTheCaller(t *testing.T) {
	h, addr := startHub(t, fastConfig())
	a := connect(t, addr, "all", descriptor("a1"))
	a.welcome()
	var got []gateway.Progress
	res := dispatchAsync(h, agentlink.Task{Operator: "echo", Input: echoInput("x"), Progress: func(p gateway.Progress) { got = append(got, p) }})
	d := a.dispatched()
	a.ack(d.GetTaskId(), true, "")
	for i := 1; i <= 3; i++ {
		a.send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Progress{Progress: &agentlinkv1.TaskProgress{
			TaskId: d.GetTaskId(), Progress: float64(i), Total: 3, Message: "step"}}})
	}
	a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, `{"text":"x"}`, "")
	if r := <-res; r.err != nil {
		t.Fatal(r.err)
	}
	if len(got) != 3 || got[2].Progress != 3 || got[2].Total == nil || *got[2].Total != 3 || got[0].Message != "step" {
		t.Fatalf("progress = %+v", got)
	}
}

func TestRevokedCredentialDisconnects(t *testing.T) {
	ends := make(chan func(error), 1)
	stopped := make(chan struct{})
	watch := func(p gateway.Principal, end func(error)) func() {
		if p.Subject != "agent-all" {
			t.Errorf("watching %q", p.Subject)
		}
		ends <- end
		return func() { close(stopped) }
	}
	h, addr := startHubOpts(t, fastConfig(), agentlink.Options{Watch: watch})
	a := connect(t, addr, "all", descriptor("a1"))
	a.welcome()
	a.serveEcho()
	(<-ends)(gateway.NewError(schemas.CodeAuthentication).With("reason", "revoked"))
	waitAgents(t, h, 0)
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch was not stopped when the connection ended")
	}
}
