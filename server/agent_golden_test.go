package server

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"golang.org/x/tools/txtar"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// agentGoldenFile holds the error bodies of the agent link's failures, replayed over HTTP
// and WebSocket like the other golden files (TestGolden), against one scripted agent.
const agentGoldenFile = "testdata/gatehouse/agents/failures.txtar"

// agentGoldenConfig: the agent link with a short dispatch timeout.
const agentGoldenConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  internal: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
websocket: {}
auth:
  anonymous: {}
agents:
  heartbeat_interval: 1s
  dispatch_timeout: 200ms
  auth: {allow_loopback_anonymous: true}
`

// scriptedOperators are the scripted agent's operators, each failing one way.
var scriptedOperators = []string{"refuse", "fail", "stall", "vanish"}

// runScriptedAgent connects an agent "scripted" to addr whose operators fail on purpose:
// refuse rejects the task, fail reports an execution failure, stall never answers (the task
// times out), vanish closes the connection (the agent is gone; it connects again).
func runScriptedAgent(t *testing.T, ts *testServer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			scriptedSession(ctx, ts.InternalAddr().String())
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitScripted(t, ts)
}

// waitScripted waits until the scripted agent is connected.
func waitScripted(t *testing.T, ts *testServer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(ts.agents.Agents()) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the scripted agent did not connect")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// scriptedSession is one connection of the scripted agent, until it vanishes or ctx ends.
func scriptedSession(ctx context.Context, addr string) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return
	}
	defer func() { _ = cc.Close() }()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := agentlinkv1.NewAgentLinkServiceClient(cc).Connect(sctx)
	if err != nil {
		time.Sleep(10 * time.Millisecond)
		return
	}
	d := &agentlinkv1.NodeDescriptor{AgentId: "scripted", ProtocolVersions: []string{"1.0.0"}, Arch: "amd64", Os: "linux", CpuCores: 1}
	for _, op := range scriptedOperators {
		d.Operators = append(d.Operators, &agentlinkv1.Operator{Id: op, Description: "Fails: " + op + ".", InputSchemaJson: `{"type":"object"}`})
	}
	if st.Send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_NodeDescriptor{NodeDescriptor: d}}) != nil {
		return
	}
	for {
		m, err := st.Recv()
		if err != nil {
			return
		}
		var reply *agentlinkv1.ConnectRequest
		switch {
		case m.GetHeartbeat() != nil:
			reply = &agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Heartbeat{Heartbeat: &agentlinkv1.Heartbeat{Sequence: 1}}}
		case m.GetDispatch() != nil:
			id := m.GetDispatch().GetTaskId()
			switch m.GetDispatch().GetOperator() {
			case "refuse":
				reply = &agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Ack{Ack: &agentlinkv1.TaskAck{TaskId: id, Reason: "no GPU free"}}}
			case "fail":
				_ = st.Send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Ack{Ack: &agentlinkv1.TaskAck{TaskId: id, Accepted: true}}})
				reply = &agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Result{Result: &agentlinkv1.TaskResult{TaskId: id,
					Status: agentlinkv1.TaskStatus_TASK_STATUS_FAILED, Diagnostics: "matrix is singular"}}}
			case "stall":
				reply = &agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Ack{Ack: &agentlinkv1.TaskAck{TaskId: id, Accepted: true}}}
			case "vanish":
				_ = st.Send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Ack{Ack: &agentlinkv1.TaskAck{TaskId: id, Accepted: true}}})
				_ = st.CloseSend()
				for { // until the gateway ends the stream: it saw the agent close it
					if _, err := st.Recv(); err != nil {
						return
					}
				}
			}
		}
		if reply != nil && st.Send(reply) != nil {
			return
		}
	}
}

// taskIDRE matches the per-hub task counter in task ids, which differs between replays.
var taskIDRE = regexp.MustCompile(`"task_id":"golden/\d+"`)

func normalizeAgentBody(body string) string {
	return taskIDRE.ReplaceAllString(normalize(body), `"task_id":"golden/N"`)
}

// TestAgentGolden replays the agent failures' golden exchanges over HTTP and WebSocket:
// each failure's code, message, recovery hint and data, exactly.
func TestAgentGolden(t *testing.T) {
	ts := start(t, agentGoldenConfig, nil)
	runScriptedAgent(t, ts)
	ar, err := txtar.ParseFile(agentGoldenFile)
	if err != nil {
		t.Fatal(err)
	}
	for i, ex := range parseExchanges(t, ar) {
		for _, face := range []string{"http", "websocket"} {
			waitScripted(t, ts) // after vanish, it connects again
			var got string
			if face == "http" {
				status, hdr, body := ts.post(ex.send)
				checkHTTPStatus(t, ex, status, hdr, body)
				got = body
			} else {
				got = wsRoundTrip(t, dialWS(t, ts, nil), ex.send, true)
			}
			if !jsonSubset(t, ex.spec, got) {
				t.Errorf("exchange %d over %s:\n got %s\nwant (as a subset) %s", ex.n, face, got, ex.spec)
			}
			if *update && face == "http" {
				setSection(ar, strconv.Itoa(i+1)+".golden", normalizeAgentBody(got))
			} else if !*update && normalizeAgentBody(got) != ex.golden {
				t.Errorf("exchange %d over %s:\n got %s\nwant %s", ex.n, face, normalizeAgentBody(got), ex.golden)
			}
		}
	}
	if *update {
		if err := os.WriteFile(agentGoldenFile, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
