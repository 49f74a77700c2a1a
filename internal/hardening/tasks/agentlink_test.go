package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// agentConfig lets anonymous agents connect from loopback to the internal listener, with
// short heartbeats and dispatch timeout so that silence and lateness show within a run —
// yet generous for a loaded machine: silence shows after 1s, before a task's 2s timeout.
const agentConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  internal: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  anonymous: {}
routing:
  demo: {}
agents:
  heartbeat_interval: 200ms
  missed_heartbeats: 5
  dispatch_timeout: 2s
  max_concurrent_tasks: 16
  auth: {require_credential: false, allow_loopback_anonymous: true}
`

// The agent link's error codes (docs/agents.md, Errors).
const (
	codeRejected = 1002
	codeFailed   = 1003
	codeTimeout  = 1004
	codeGone     = 1005
	codeNoAgent  = 1006
)

// What the scripted agent does with a task; the caller names it in the input ("do").
var agentBehaviours = []string{"ok", "fail", "reject", "duplicate", "late", "disconnect", "half-close", "unknown-result", "silent"}

// ending reports whether a behaviour ends the agent's connection (every task in flight
// then fails with 1005).
func ending(b string) bool {
	return b == "disconnect" || b == "half-close" || b == "unknown-result" || b == "silent"
}

// agentOutcomes is the model: the outcomes a call asking for behaviour b may end with,
// when the episode's agent ends its connection (endsConn) or not.
func agentOutcomes(b string, endsConn bool) map[int]bool {
	own := map[string]int{"ok": 0, "duplicate": 0, "fail": codeFailed, "reject": codeRejected, "late": codeTimeout,
		"disconnect": codeGone, "half-close": codeGone, "unknown-result": codeGone, "silent": codeGone}[b]
	out := map[int]bool{own: true}
	if endsConn { // in flight when the agent went: 1005; sent after it left: 1006
		out[codeGone], out[codeNoAgent] = true, true
	}
	return out
}

// scriptedAgent is an in-process agent on the real gRPC stream, acting out each task's
// behaviour.
type scriptedAgent struct {
	stream grpc.BidiStreamingClient[agentlinkv1.ConnectRequest, agentlinkv1.ConnectResponse]
	cancel context.CancelFunc
	sendMu sync.Mutex
	mu     sync.Mutex
	silent bool
	done   chan error // the reader's end
	wg     sync.WaitGroup
}

func (a *scriptedAgent) send(m *agentlinkv1.ConnectRequest) error {
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	return a.stream.Send(m)
}

func (a *scriptedAgent) isSilent() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.silent
}

// connectAgent opens a stream as agent id and reads the gateway's answer to its
// descriptor: a Welcome (the agent then serves), or the Reject's reason.
func connectAgent(cc *grpc.ClientConn, id string) (*scriptedAgent, string, error) {
	ctx, cancel := context.WithCancel(context.Background())
	st, err := agentlinkv1.NewAgentLinkServiceClient(cc).Connect(ctx)
	if err != nil {
		cancel()
		return nil, "", err
	}
	a := &scriptedAgent{stream: st, cancel: cancel, done: make(chan error, 1)}
	d := &agentlinkv1.NodeDescriptor{AgentId: id, ProtocolVersions: []string{"1.0.0"}, MaxConcurrentTasks: 16,
		Operators: []*agentlinkv1.Operator{{Id: "echo", Description: "Acts out the behaviour its input names.",
			InputSchemaJson: `{"type":"object","properties":{"do":{"type":"string"}},"required":["do"]}`}}}
	if err := a.send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_NodeDescriptor{NodeDescriptor: d}}); err != nil {
		cancel()
		return nil, "", err
	}
	m, err := st.Recv()
	if err != nil {
		cancel()
		return nil, "", err
	}
	if r := m.GetReject(); r != nil {
		cancel()
		return nil, r.GetReason(), nil
	}
	w := m.GetWelcome()
	if w == nil {
		cancel()
		return nil, "", fmt.Errorf("first message %v", m)
	}
	iv := time.Duration(w.GetHeartbeatIntervalMs()) * time.Millisecond
	a.wg.Go(func() {
		t := time.NewTicker(iv)
		defer t.Stop()
		for seq := uint64(1); ; seq++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !a.isSilent() {
					_ = a.send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Heartbeat{Heartbeat: &agentlinkv1.Heartbeat{Sequence: seq}}})
				}
			}
		}
	})
	a.wg.Go(func() { a.done <- a.serve(ctx) })
	return a, "", nil
}

func agentResult(id string, ok bool, out string) *agentlinkv1.ConnectRequest {
	r := &agentlinkv1.TaskResult{TaskId: id, Status: agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, OutputJson: []byte(out)}
	if !ok {
		r = &agentlinkv1.TaskResult{TaskId: id, Status: agentlinkv1.TaskStatus_TASK_STATUS_FAILED, Diagnostics: "asked to fail"}
	}
	return &agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Result{Result: r}}
}

func agentAck(id string, ok bool) *agentlinkv1.ConnectRequest {
	return &agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Ack{Ack: &agentlinkv1.TaskAck{TaskId: id, Accepted: ok, Reason: "asked to reject"}}}
}

// serve acts out each dispatched task's behaviour until the stream ends.
func (a *scriptedAgent) serve(ctx context.Context) error {
	for {
		m, err := a.stream.Recv()
		if err != nil {
			return err
		}
		d := m.GetDispatch()
		if d == nil {
			continue
		}
		var in struct{ Do string }
		_ = json.Unmarshal(d.GetInputJson(), &in)
		id := d.GetTaskId()
		if in.Do == "reject" {
			_ = a.send(agentAck(id, false))
			continue
		}
		if a.isSilent() {
			continue
		}
		_ = a.send(agentAck(id, true))
		switch in.Do {
		case "ok":
			_ = a.send(agentResult(id, true, `{"done":true}`))
		case "fail":
			_ = a.send(agentResult(id, false, ""))
		case "duplicate":
			_ = a.send(agentResult(id, true, `{"done":true}`))
			_ = a.send(agentResult(id, true, `{"done":"again"}`))
		case "late":
			timeout := time.Duration(d.GetTimeoutMs()) * time.Millisecond
			a.wg.Go(func() {
				select {
				case <-ctx.Done():
				case <-time.After(timeout + 100*time.Millisecond):
					_ = a.send(agentResult(id, true, `{"late":true}`))
				}
			})
		case "disconnect":
			a.cancel() // an RST_STREAM with the task in flight
		case "half-close":
			a.sendMu.Lock()
			_ = a.stream.CloseSend() // the agent's side of the stream ends with the task in flight
			a.sendMu.Unlock()
		case "unknown-result":
			_ = a.send(agentResult("never-dispatched/1", true, `{}`))
		case "silent":
			a.mu.Lock()
			a.silent = true
			a.mu.Unlock()
		}
	}
}

func (a *scriptedAgent) close() {
	a.cancel()
	a.wg.Wait()
}

// TestAgentLinkModel: episodes of one scripted agent serving concurrent calls, each asking
// for a behaviour — a result, a failure, a refusal, a duplicate result, a late one, a
// result for a task never given, a reset, a half-close or silence with tasks in flight — plus
// re-registration under a connected agent's id and calls with no agent; every call must
// end with the model's outcome (a result or the typed error), and a reload runs all the
// while.
func TestAgentLinkModel(t *testing.T) {
	g := hardening.Start(t, agentConfig)
	cc, err := grpc.NewClient(g.Internal, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cc.Close() }()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	defer hc.CloseIdleConnections()
	p := &poster{c: hc, url: g.Base + "/rpc"}
	call := func(do string) (int, string, error) {
		_, body, err := p.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"agent.echo","params":{"do":%q}}`, do), "", false)
		if err != nil {
			return 0, "", err
		}
		var r reply
		if err := json.Unmarshal(body, &r); err != nil {
			return 0, "", fmt.Errorf("%s: %w", body, err)
		}
		if r.Error != nil {
			if l := hardening.Leaks(r.Error.Message+string(r.Error.Data), g.Internal); len(l) > 0 {
				return 0, "", fmt.Errorf("%s leaks %q", body, l)
			}
			if r.Error.Code >= codeRejected && r.Error.Code <= codeGone && !strings.Contains(string(r.Error.Data), "recovery_hint") {
				return 0, "", fmt.Errorf("%s: no recovery hint", body)
			}
			return r.Error.Code, string(body), nil
		}
		return 0, string(body), nil
	}
	// Warm up: an agent, a call, the agent gone.
	a, reason, err := connectAgent(cc, "warm")
	if err != nil || a == nil {
		t.Fatalf("warm-up agent: %v %s", err, reason)
	}
	waitCode := func(do string, want int) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			code, body, err := call(do)
			if err == nil && code == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d %s %v, want %d", do, code, body, err, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitCode("ok", 0)
	a.close()
	waitCode("ok", codeNoAgent)
	hc.CloseIdleConnections()
	base := hardening.Take(func() int { return g.State.Len() })
	t.Log(base)

	r, h := seeded(t)
	var tally counts
	runs := hardening.Iterations(t, 3)
	for run := range runs {
		stop := reloader(t, g, agentConfig)
		for ep := range 6 {
			if err := agentEpisode(r, cc, call, fmt.Sprintf("agent-%d", r.IntN(3)), h, &tally); err != nil {
				t.Errorf("run %d episode %d: %v\n%s", run, ep, err, h)
				break
			}
		}
		reloads := stop()
		if t.Failed() {
			return
		}
		t.Logf("run %d: %d reloads", run, reloads)
		hc.CloseIdleConnections()
		base.Check(t, 15*time.Second, hardening.Slack{Goroutines: 4, FDs: 4})
	}
	t.Logf("outcomes over %d runs: %s", runs, tally.String())
}

// agentEpisode connects one agent, checks that a second one under its id is rejected,
// sends 1–6 concurrent calls of generated behaviours, closes the agent and checks that
// a call then finds no agent.
func agentEpisode(r *rand.Rand, cc *grpc.ClientConn, call func(string) (int, string, error), id string, h *history, tally *counts) error {
	var a *scriptedAgent
	deadline := time.Now().Add(15 * time.Second)
	for a == nil { // the previous episode's agent under this id may still be leaving
		var reason string
		var err error
		if a, reason, err = connectAgent(cc, id); err != nil {
			return fmt.Errorf("connect %s: %w", id, err)
		}
		if a == nil && (!strings.Contains(reason, "connected already") || time.Now().After(deadline)) {
			return fmt.Errorf("connect %s: rejected: %s", id, reason)
		}
		if a == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	defer a.close()
	if dup, reason, err := connectAgent(cc, id); err != nil || dup != nil || !strings.Contains(reason, id) {
		if dup != nil {
			dup.close()
		}
		return fmt.Errorf("a second agent %s: %w, reject %q; want a reject naming the id", id, err, reason)
	}
	h.addf("%s connected; a second %s rejected", id, id)
	tally.inc("re-registration rejected")
	n := 1 + r.IntN(6)
	dos := make([]string, n)
	endsConn := false
	for i := range dos {
		dos[i] = agentBehaviours[r.IntN(len(agentBehaviours))]
		if ending(dos[i]) {
			if endsConn { // one connection-ending behaviour per episode
				dos[i] = "ok"
			}
			endsConn = true
		}
	}
	type res struct {
		code int
		body string
		err  error
	}
	out := make([]res, n)
	var wg sync.WaitGroup
	for i, do := range dos {
		wg.Go(func() {
			time.Sleep(time.Duration(i*10) * time.Millisecond)
			c, b, err := call(do)
			out[i] = res{c, b, err}
		})
	}
	wg.Wait()
	var errs []error
	for i, do := range dos {
		o := out[i]
		h.addf("%s call %s → %d", id, do, o.code)
		tally.inc(fmt.Sprintf("%s %d", do, o.code))
		if o.err != nil {
			errs = append(errs, fmt.Errorf("call %s: %w", do, o.err))
		} else if !agentOutcomes(do, endsConn)[o.code] {
			errs = append(errs, fmt.Errorf("call %s ended %d (%s); the model allows %v", do, o.code, o.body, agentOutcomes(do, endsConn)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if !endsConn { // the connection survived duplicates and late results: it still serves
		if code, body, err := call("ok"); err != nil || code != 0 {
			return fmt.Errorf("after %v the agent no longer serves: %d %s %w", dos, code, body, err)
		}
	}
	a.close()
	// Gone: the next call finds no agent (once the gateway has seen the stream end).
	deadline = time.Now().Add(15 * time.Second)
	for {
		code, body, err := call("ok")
		if err == nil && code == codeNoAgent {
			break
		}
		if err != nil || (code != 0 && code != codeGone) || time.Now().After(deadline) {
			return fmt.Errorf("after the agent left: %d %s (%w), want %d", code, body, err, codeNoAgent)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
