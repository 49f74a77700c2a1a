package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	"github.com/gatehouse-dev/gatehouse/internal/otelstack"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// latestLegacy is the last MCP revision with initialize (what an unknown revision gets).
const latestLegacy = "2025-11-25"

// simpleText is what the demo MCP server's test_simple_text tool answers.
const simpleText = "This is a simple text response for testing."

// code is the error code of r, 0 without an error.
func code(r response) int {
	if r.Error == nil {
		return 0
	}
	return r.Error.Code
}

// ---- 1. happy path -------------------------------------------------------------------

// pendingTrace is a trace to find in Jaeger once every run is over: the ingress span of
// method with its protocol, method and caller attributes, and a hop span (name prefix hop)
// under it.
type pendingTrace struct {
	id, method, hop string
}

// happyPath: a task submitted over JSON-RPC runs on the agent, whose operator makes its own
// tool call through the gateway to the gRPC calculator; a direct MCP tool call; the
// responses' schema and values; the traces are checked in Jaeger at the end.
func happyPath(ctx context.Context, e *env, r *rec, i int) {
	tok, err := token(fmt.Sprintf("happy-%d", i), "calc:read")
	if !r.check("caller token", false, err == nil, "%v", err) {
		return
	}
	x, y := 1000+i, 7*i
	before := e.calc.count("Subtract")
	var resp response
	var h http.Header
	r.timed(func() {
		resp, h, err = e.call(ctx, tok, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"agent.plan","params":{"minuend":%d,"subtrahend":%d}}`, i+1, x, y))
	})
	if !r.check("task answered", false, err == nil, "%v", err) {
		return
	}
	r.check("response schema", false, resp.schemaOK(strconv.Itoa(i+1)) == nil, "%v", resp.schemaOK(strconv.Itoa(i+1)))
	var out struct {
		Agent  string `json:"agent"`
		TaskID string `json:"task_id"`
		Output struct {
			Difference json.Number `json:"difference"`
			ToolTrace  string      `json:"tool_trace"`
		} `json:"output"`
	}
	_ = json.Unmarshal(resp.Result, &out)
	r.check("result is the difference", true, out.Output.Difference.String() == strconv.Itoa(x-y) && out.Agent == "gate-agent" && out.TaskID != "",
		"result %s, want difference %d from gate-agent (error %+v)", resp.Result, x-y, resp.Error)
	r.check("the agent's tool call reached the backend once", true, e.calc.count("Subtract") == before+1,
		"the calculator saw %d Subtract calls, want 1", e.calc.count("Subtract")-before)
	e.pending = append(e.pending, pendingTrace{h.Get("X-Trace-Id"), "agent.plan", "agentlink.dispatch"})
	if out.Output.ToolTrace != "" {
		e.pending = append(e.pending, pendingTrace{out.Output.ToolTrace, "calc.subtract", "grpc calculator.v1.CalculatorService/Subtract"})
	}

	r.timed(func() {
		resp, h, err = e.call(ctx, tok, fmt.Sprintf(`{"jsonrpc":"2.0","id":"m%d","method":"mcp.test_simple_text","params":{}}`, i))
	})
	if !r.check("tool call answered", false, err == nil, "%v", err) {
		return
	}
	id := strconv.Quote("m" + strconv.Itoa(i))
	r.check("tool response schema", false, resp.schemaOK(id) == nil, "%v", resp.schemaOK(id))
	var tool struct {
		Content []struct{ Type, Text string } `json:"content"`
	}
	_ = json.Unmarshal(resp.Result, &tool)
	r.check("tool result", true, len(tool.Content) == 1 && tool.Content[0].Text == simpleText, "result %s error %+v", resp.Result, resp.Error)
	e.pending = append(e.pending, pendingTrace{h.Get("X-Trace-Id"), "mcp.test_simple_text", "mcp tools/call test_simple_text"})
}

// happyTraces finds every happy-path trace in Jaeger: the ingress span (service gatehouse,
// rpc.method, gatehouse.protocol, gatehouse.caller.hash) and the hop's span as its child.
func happyTraces(ctx context.Context, e *env, r *rec) {
	for _, p := range e.pending {
		if !r.check("trace id returned", false, len(p.id) == 32, "X-Trace-Id %q of %s", p.id, p.method) {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		spans, err := e.jaeger.WaitForTrace(wctx, p.id, 2)
		cancel()
		r.check("trace complete", false, traceComplete(spans, p) == nil, "%s (%v): %v", p.method, err, traceComplete(spans, p))
	}
	e.pending = nil
}

func traceComplete(spans []otelstack.Span, p pendingTrace) error {
	var ingress *otelstack.Span
	for i := range spans {
		if spans[i].Name == "http "+p.method && spans[i].ParentSpanID == "" {
			ingress = &spans[i]
		}
	}
	if ingress == nil {
		return fmt.Errorf("no root span %q among %d spans", "http "+p.method, len(spans))
	}
	if ingress.Service != service || ingress.Tags["gatehouse.protocol"] != "http" || ingress.Tags["rpc.method"] != p.method ||
		ingress.Tags["gatehouse.caller.hash"] == nil || ingress.Tags["gatehouse.caller.hash"] == "" {
		return fmt.Errorf("ingress span attributes %v", ingress.Tags)
	}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, p.hop) && s.ParentSpanID == ingress.SpanID {
			return nil
		}
	}
	return fmt.Errorf("no %q span under the ingress span", p.hop)
}

// ---- 2. deadline propagation ---------------------------------------------------------

// deadlineBudget is the caller's deadline in the deadline scenario.
const deadlineBudget = 600 * time.Millisecond

func deadlineHeader(at time.Time) []string {
	return []string{"X-Deadline-Ms", strconv.FormatInt(at.UnixMilli(), 10)}
}

// deadlinePropagation: a tight caller deadline reaches the gRPC backend (less the reserve)
// and the agent's task, which both run past it; each call ends DEADLINE_EXCEEDED (-32000,
// layer backend) or the agent's timeout (1004) within the deadline and a bound; a deadline
// below min_remaining is refused at the boundary without reaching the backend.
func deadlinePropagation(ctx context.Context, e *env, r *rec, i int) {
	tok, err := token(fmt.Sprintf("deadline-%d", i), "calc:read")
	if !r.check("caller token", false, err == nil, "%v", err) {
		return
	}
	e.slow.hang.Store(true)
	defer e.slow.hang.Store(false)

	before := e.slow.count("Subtract")
	dl := time.Now().Add(deadlineBudget)
	var resp response
	took := r.timed(func() {
		resp, _, err = e.call(ctx, tok, `{"jsonrpc":"2.0","id":1,"method":"slow.subtract","params":[5,3]}`, deadlineHeader(dl)...)
	})
	r.check("gRPC: DEADLINE_EXCEEDED at layer backend", false, err == nil && code(resp) == -32000 && resp.errData("layer") == "backend" && resp.errData("backend") == "slow",
		"%v %+v", err, resp.Error)
	r.check("gRPC: answered within the deadline + 50%", false, took <= deadlineBudget+deadlineBudget/2, "took %s", took)
	s, ok := e.slow.last("Subtract")
	r.check("gRPC: the backend got the caller's deadline less the reserve", false,
		ok && e.slow.count("Subtract") == before+1 && !s.deadline.IsZero() && !s.deadline.After(dl.Add(-reserve+reserve/3)) && s.deadline.After(dl.Add(-reserve-deadlineBudget/2)),
		"backend deadline %s before the caller's (reserve %s), calls %d", dl.Sub(s.deadline), reserve, e.slow.count("Subtract")-before)

	for len(e.agentDeadline) > 0 {
		<-e.agentDeadline
	}
	dl = time.Now().Add(deadlineBudget)
	took = r.timed(func() {
		resp, _, err = e.call(ctx, tok, `{"jsonrpc":"2.0","id":2,"method":"agent.wait","params":{}}`, deadlineHeader(dl)...)
	})
	r.check("agent: task timed out (1004)", false, err == nil && code(resp) == 1004 && resp.errData("operator") == "wait", "%v %+v", err, resp.Error)
	r.check("agent: answered within the deadline + 50%", false, took <= deadlineBudget+deadlineBudget/2, "took %s", took)
	select {
	case seen := <-e.agentDeadline:
		r.check("agent: the task's deadline is within the caller's", false, !seen.After(dl.Add(20*time.Millisecond)) && seen.After(dl.Add(-deadlineBudget/2)),
			"the agent's deadline is %s after the caller's", seen.Sub(dl))
	case <-time.After(2 * time.Second):
		r.check("agent: the task's deadline is within the caller's", false, false, "the agent's operator never ran")
	}

	before = e.slow.count("Subtract")
	r.timed(func() {
		resp, _, err = e.call(ctx, tok, `{"jsonrpc":"2.0","id":3,"method":"slow.subtract","params":[5,3]}`, deadlineHeader(time.Now().Add(epsilon/5))...)
	})
	r.check("boundary: less than min_remaining refused at layer boundary", false, err == nil && code(resp) == -32000 && resp.errData("layer") == "boundary",
		"%v %+v", err, resp.Error)
	time.Sleep(20 * time.Millisecond)
	r.check("boundary: the backend never saw the call", false, e.slow.count("Subtract") == before, "%d calls reached it", e.slow.count("Subtract")-before)
}

// ---- 3. auth propagation -------------------------------------------------------------

// authPropagation: a caller with scopes calc:read and unrelated calls calc.sum, which needs
// calc:write: refused at the gateway (4002, the missing scope named) and the backend never
// sees it; calc.subtract is served and the backend gets a hop token minted for it (aud
// calc) with the caller as subject and only the narrowed scopes; no or a forged credential
// is refused (4001); no refusal leaks a secret.
func authPropagation(ctx context.Context, e *env, r *rec, i int) {
	sub := fmt.Sprintf("bob-%d", i)
	tok, err := token(sub, "calc:read", "unrelated")
	if !r.check("caller token", false, err == nil, "%v", err) {
		return
	}
	secrets := []string{callerSecret, tok, e.calc.addr, e.slow.addr, e.flky.addr}

	before := e.calc.count("Sum")
	var status int
	var body []byte
	r.timed(func() {
		status, _, body, err = e.post(ctx, tok, `{"jsonrpc":"2.0","id":1,"method":"calc.sum","params":{"values":[1,2]}}`)
	})
	resp, derr := decode(body)
	missing, _ := json.Marshal(resp.errData("missing_scopes"))
	r.check("scope missing: refused with 4002 naming calc:write", true, err == nil && derr == nil && status == http.StatusForbidden && code(resp) == 4002 &&
		string(missing) == `["calc:write"]`, "%v %d %s", err, status, body)
	time.Sleep(10 * time.Millisecond)
	r.check("scope missing: the backend never saw the call", true, e.calc.count("Sum") == before, "%d Sum calls reached the backend", e.calc.count("Sum")-before)
	r.check("scope missing: nothing leaked", true, len(hardening.Leaks(string(body), secrets...)) == 0, "%q", hardening.Leaks(string(body), secrets...))

	before = e.calc.count("Subtract")
	r.timed(func() {
		resp, _, err = e.call(ctx, tok, `{"jsonrpc":"2.0","id":2,"method":"calc.subtract","params":[5,3]}`)
	})
	r.check("in scope: served", true, err == nil && resp.Error == nil && string(resp.Result) == "2", "%v %s %+v", err, resp.Result, resp.Error)
	s, ok := e.calc.last("Subtract")
	if r.check("in scope: one hop with one credential", true, ok && e.calc.count("Subtract") == before+1 && len(s.auth) == 1,
		"calls %d, authorization values %d", e.calc.count("Subtract")-before, len(s.auth)) {
		c, verr := e.hop.Verify(s.auth[0])
		r.check("hop token verifies against the published keys", true, verr == nil, "%v", verr)
		r.check("hop token: the caller as subject, the gateway as actor, aud calc", true,
			c.Subject == sub && slices.Equal(c.Audience, []string{"calc"}) && c.Actor["sub"] == "gatehouse", "claims %+v", c)
		r.check("hop token: only the narrowed scopes", true, slices.Equal(c.Scopes, []string{"calc:read"}), "scopes %v, want [calc:read]", c.Scopes)
		r.check("hop token: not the caller's token", true, s.auth[0] != "Bearer "+tok, "the caller's token was forwarded")
	}

	before = e.calc.count("Subtract")
	forged := strings.TrimSuffix(tok, tok[len(tok)-4:]) + "AAAA"
	for _, c := range []struct{ name, tok string }{{"no credential", ""}, {"forged credential", forged}} {
		r.timed(func() {
			status, _, body, err = e.post(ctx, c.tok, `{"jsonrpc":"2.0","id":3,"method":"calc.subtract","params":[5,3]}`)
		})
		resp, derr = decode(body)
		r.check(c.name+": refused with 4001", true, err == nil && derr == nil && status == http.StatusUnauthorized && code(resp) == 4001, "%v %d %s", err, status, body)
		r.check(c.name+": nothing leaked", true, len(hardening.Leaks(string(body), secrets...)) == 0, "%q", hardening.Leaks(string(body), secrets...))
	}
	time.Sleep(10 * time.Millisecond)
	r.check("refused callers: the backend never saw a call", true, e.calc.count("Subtract") == before, "%d calls reached it", e.calc.count("Subtract")-before)
}

// errData is r's error data member k (nil without it).
func (r response) errData(k string) any {
	if r.Error == nil {
		return nil
	}
	m, _ := r.Error.Data.(map[string]any)
	return m[k]
}

// ---- 4. batch semantics --------------------------------------------------------------

// batchSemantics: a batch of a success, an unknown method, a notification, invalid params,
// a call to another target and a call refused by scope: every member runs on its own, each
// with an id is answered once in request order with its own outcome, the notification runs
// and is not answered; a batch of notifications only gets no body at all.
func batchSemantics(ctx context.Context, e *env, r *rec, i int) {
	tok, err := token(fmt.Sprintf("batch-%d", i), "calc:read")
	if !r.check("caller token", false, err == nil, "%v", err) {
		return
	}
	x := 50 + i
	batch := fmt.Sprintf(`[
{"jsonrpc":"2.0","id":1,"method":"calc.subtract","params":[%[1]d,8]},
{"jsonrpc":"2.0","id":"u%[2]d","method":"no.such.method"},
{"jsonrpc":"2.0","method":"calc.subtract","params":[1,1]},
{"jsonrpc":"2.0","id":3,"method":"calc.subtract","params":{"x":1}},
{"jsonrpc":"2.0","id":4,"method":"subtract","params":[%[1]d,1]},
{"jsonrpc":"2.0","id":5,"method":"calc.sum","params":{"values":[1,2]}}]`, x, i)
	want := []struct {
		id     string
		result string
		code   int
	}{
		{"1", strconv.Itoa(x - 8), 0}, {strconv.Quote("u" + strconv.Itoa(i)), "", -32601}, {"3", "", -32602},
		{"4", strconv.Itoa(x - 1), 0}, {"5", "", 4002},
	}
	before := e.calc.count("Subtract")
	var status int
	var body []byte
	r.timed(func() { status, _, body, err = e.post(ctx, tok, batch) })
	var raws []json.RawMessage
	if !r.check("batch answered with an array", true, err == nil && status == http.StatusOK && json.Unmarshal(body, &raws) == nil, "%v %d %s", err, status, body) {
		return
	}
	r.check("one answer per member with an id, none for the notification", true, len(raws) == len(want), "%d answers, want %d: %s", len(raws), len(want), body)
	var ids []string
	for k, raw := range raws {
		resp, derr := decode(raw)
		if derr != nil {
			r.check("answer decodes", false, false, "%v", derr)
			continue
		}
		ids = append(ids, string(resp.ID))
		if k >= len(want) {
			continue
		}
		w := want[k]
		r.check("answer schema", false, resp.schemaOK(string(resp.ID)) == nil, "%v", resp.schemaOK(string(resp.ID)))
		r.check("member outcome independent and correct", true, string(resp.ID) == w.id && code(resp) == w.code && (w.code != 0 || string(resp.Result) == w.result),
			"answer %d = %s, want id %s result %q code %d", k, raw, w.id, w.result, w.code)
	}
	wantIDs := make([]string, len(want))
	for k, w := range want {
		wantIDs[k] = w.id
	}
	r.check("answers in request order", false, slices.Equal(ids, wantIDs), "ids %v, want %v", ids, wantIDs)
	r.check("the notification and the success ran", true, waitFor(2*time.Second, func() bool { return e.calc.count("Subtract") == before+2 }) == nil,
		"%d Subtract calls, want 2", e.calc.count("Subtract")-before)

	before = e.calc.count("Subtract")
	r.timed(func() {
		status, _, body, err = e.post(ctx, tok, `[{"jsonrpc":"2.0","method":"calc.subtract","params":[2,1]},{"jsonrpc":"2.0","method":"calc.subtract","params":[3,1]}]`)
	})
	r.check("notifications only: no body", true, err == nil && status == http.StatusNoContent && len(body) == 0, "%v %d %s", err, status, body)
	r.check("notifications only: both ran", true, waitFor(2*time.Second, func() bool { return e.calc.count("Subtract") == before+2 }) == nil,
		"%d Subtract calls, want 2", e.calc.count("Subtract")-before)
}

// ---- 5. stream lifecycle -------------------------------------------------------------

// muteOp is the one operator of the silent agents: the agent accepts its task and then
// says nothing more, heartbeats included.
var muteOp = demo.AgentOperator{ID: "mute", Description: "Accepts a task and falls silent.", Input: objectJSON, Output: objectJSON, TypicalMs: 1,
	Run: func(ctx context.Context, _ demo.AgentTask) ([]byte, error) { <-ctx.Done(); return nil, ctx.Err() }}

// streamLifecycle, on the agent link (a bidirectional gRPC stream with heartbeats): an agent
// that falls silent mid-task is dropped after missed_heartbeats intervals and its task fails
// with 1005 naming it and the reason; an agent that half-closes its side gets the end of the
// stream (OK) and is deregistered; an operator's error reaches the caller as 1003 with its
// diagnostics.
func streamLifecycle(ctx context.Context, e *env, r *rec, i int) {
	tok, err := token(fmt.Sprintf("stream-%d", i), "calc:read")
	if !r.check("caller token", false, err == nil, "%v", err) {
		return
	}
	id := fmt.Sprintf("mute-%d", e.agentIDs.Add(1))
	stop, err := e.runAgent(id, "silent", []demo.AgentOperator{muteOp})
	if !r.check("silent agent connects", false, err == nil, "%v", err) {
		return
	}
	defer stop()
	var resp response
	took := r.timed(func() {
		resp, _, err = e.call(ctx, tok, `{"jsonrpc":"2.0","id":1,"method":"agent.mute","params":{}}`)
	})
	reason, _ := resp.errData("reason").(string)
	r.check("silent agent: task fails with 1005 naming the agent and the missed heartbeats", false,
		err == nil && code(resp) == 1005 && resp.errData("agent") == id && strings.Contains(reason, "heartbeat"), "%v %+v", err, resp.Error)
	r.check("silent agent: dropped after the missed heartbeats, not before", false, took >= missedBeats*beatEvery-beatEvery/2,
		"the task failed after %s, before %d intervals of %s", took, missedBeats, beatEvery)
	r.check("silent agent: deregistered", false, waitFor(5*time.Second, func() bool { return !e.agentListed(id) }) == nil, "still listed")

	took, herr := e.halfClose(ctx, fmt.Sprintf("half-%d", e.agentIDs.Add(1)))
	r.res.Latencies = append(r.res.Latencies, took)
	r.check("half-close: the gateway ends the stream with OK and deregisters the agent", false, herr == nil, "%v", herr)

	why := fmt.Sprintf("bad input %d", i)
	r.timed(func() {
		resp, _, err = e.call(ctx, tok, `{"jsonrpc":"2.0","id":2,"method":"agent.fail","params":{"reason":"`+why+`"}}`)
	})
	r.check("operator error: 1003 with the agent's diagnostics", true, err == nil && code(resp) == 1003 && resp.errData("diagnostics") == why,
		"%v %+v", err, resp.Error)
}

// runAgent runs a reference agent until stop and waits until the gateway lists it.
func (e *env) runAgent(id, fault string, ops []demo.AgentOperator) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = demo.RunAgent(ctx, demo.AgentOptions{Addr: e.gw.Internal, ID: id, Fault: fault, Operators: ops, Logger: e.logger})
	}()
	stop = func() { cancel(); <-done }
	if err := waitFor(15*time.Second, func() bool { return e.agentListed(id) }); err != nil {
		stop()
		return nil, fmt.Errorf("agent %s did not connect: %w", id, err)
	}
	return stop, nil
}

// halfClose connects an agent over the raw agent link, half-closes its side once welcomed
// and listed, and returns how long the gateway took to end the stream; an error unless the
// stream ended with OK (io.EOF) and the agent is no longer listed.
func (e *env) halfClose(ctx context.Context, id string) (time.Duration, error) {
	cc, err := grpc.NewClient(e.gw.Internal, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return 0, err
	}
	defer func() { _ = cc.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	st, err := agentlinkv1.NewAgentLinkServiceClient(cc).Connect(ctx)
	if err != nil {
		return 0, err
	}
	d := &agentlinkv1.NodeDescriptor{AgentId: id, ProtocolVersions: []string{"1.0.0"}, MaxConcurrentTasks: 1,
		Operators: []*agentlinkv1.Operator{{Id: "mute", Description: muteOp.Description, InputSchemaJson: muteOp.Input, OutputSchemaJson: muteOp.Output}}}
	if err := st.Send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_NodeDescriptor{NodeDescriptor: d}}); err != nil {
		return 0, err
	}
	m, err := st.Recv()
	if err != nil || m.GetWelcome() == nil {
		return 0, fmt.Errorf("no welcome (%v): %w", m, err)
	}
	if err := waitFor(10*time.Second, func() bool { return e.agentListed(id) }); err != nil {
		return 0, fmt.Errorf("never listed: %w", err)
	}
	began := time.Now()
	if err := st.CloseSend(); err != nil {
		return 0, err
	}
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return time.Since(began), fmt.Errorf("the stream ended with %w, want OK", err)
		}
		if m.GetWelcome() != nil || m.GetDispatch() != nil {
			return time.Since(began), fmt.Errorf("after the half-close the gateway sent %v", m)
		}
	}
	took := time.Since(began)
	if err := waitFor(5*time.Second, func() bool { return !e.agentListed(id) }); err != nil {
		return took, errors.New("still listed after the half-close")
	}
	return took, nil
}

// ---- 6. version mismatch -------------------------------------------------------------

// versionMismatch: MCP clients of 2025-06-18 and 2025-11-25 get their version and are
// served; a client of an unknown old revision gets the latest legacy one (graceful); a
// 2026-07-28 client is served statelessly; an unknown revision named in the header is
// refused with -32022 listing the supported ones. A2A 0.3 (no header) and 1.0 are served,
// another version is refused with -32009. An agent offering only an old agent-link version
// is rejected with the versions named.
func versionMismatch(ctx context.Context, e *env, r *rec, i int) {
	tok, err := token(fmt.Sprintf("version-%d", i), "calc:read")
	if !r.check("caller token", false, err == nil, "%v", err) {
		return
	}
	for _, v := range []struct{ asked, got string }{{"2025-06-18", "2025-06-18"}, {latestLegacy, latestLegacy}, {"2024-01-01", latestLegacy}} {
		var st int
		var h http.Header
		var body []byte
		r.timed(func() {
			st, h, body, err = e.mcp(ctx, tok, "", "",
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+v.asked+`","capabilities":{},"clientInfo":{"name":"gate","version":"1"}}}`)
		})
		resp, derr := decode(body)
		var init struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(resp.Result, &init)
		session := h.Get("Mcp-Session-Id")
		if !r.check("MCP "+v.asked+": initialize negotiates "+v.got, false, err == nil && derr == nil && st == http.StatusOK && init.ProtocolVersion == v.got && session != "",
			"%v %d %s", err, st, body) {
			continue
		}
		r.timed(func() {
			st, _, body, err = e.mcp(ctx, tok, session, v.got, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`)
		})
		r.check("MCP "+v.asked+": tool call served on the session", true, err == nil && st == http.StatusOK && strings.Contains(string(body), simpleText), "%v %d %s", err, st, body)
		e.mcpDelete(ctx, tok, session)
	}
	meta := func(v string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientInfo":{"name":"gate","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	}
	for _, v := range []struct {
		version string
		status  int
	}{{"2026-07-28", http.StatusOK}, {"2099-01-01", http.StatusBadRequest}} {
		var st int
		var body []byte
		r.timed(func() {
			st, _, body, err = e.mcp(ctx, tok, "", v.version, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_simple_text","arguments":{},`+meta(v.version)+`}}`,
				"Mcp-Method", "tools/call", "Mcp-Name", "test_simple_text")
		})
		if v.status == http.StatusOK {
			r.check("MCP 2026-07-28: stateless tool call served", true, err == nil && st == http.StatusOK && strings.Contains(string(body), simpleText), "%v %d %s", err, st, body)
			continue
		}
		resp, derr := decode(body)
		r.check("MCP unknown revision: refused with -32022 listing the supported ones", false,
			err == nil && derr == nil && st == v.status && code(resp) == -32022 && resp.errData("requested") == v.version && resp.errData("supported") != nil, "%v %d %s", err, st, body)
	}

	send03 := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m%d","role":"user","parts":[{"kind":"data","data":{"minuend":%d,"subtrahend":1}}],"metadata":{"skill":"subtract"}}}}`
	send10 := `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"n%d","role":"ROLE_USER","parts":[{"data":{"minuend":%d,"subtrahend":1}}],"metadata":{"skill":"subtract"}}}}`
	for _, v := range []struct{ version, body, want string }{
		{"", send03, `"state":"completed"`},
		{"1.0", send10, `"TASK_STATE_COMPLETED"`},
	} {
		var st int
		var body []byte
		r.timed(func() { st, body, err = e.a2a(ctx, tok, v.version, fmt.Sprintf(v.body, i, 10+i)) })
		r.check("A2A "+cmp(v.version, "0.3 (no header)")+": served", true,
			err == nil && st == http.StatusOK && strings.Contains(string(body), v.want) && strings.Contains(string(body), strconv.Itoa(10+i-1)), "%v %d %s", err, st, body)
	}
	var st int
	var body []byte
	r.timed(func() { st, body, err = e.a2a(ctx, tok, "2.0", fmt.Sprintf(send10, i, 1)) })
	resp, derr := decode(body)
	r.check("A2A 2.0: refused with -32009 naming the supported versions", false,
		err == nil && derr == nil && st == http.StatusOK && code(resp) == -32009 && strings.Contains(string(body), "1.0, 0.3") && string(resp.ID) == "2", "%v %d %s", err, st, body)

	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	func() {
		err = demo.RunAgent(actx, demo.AgentOptions{Addr: e.gw.Internal, ID: fmt.Sprintf("old-%d", i), Versions: []string{"0.9.0"},
			Operators: []demo.AgentOperator{muteOp}, Logger: e.logger})
	}()
	r.check("agent link 0.9.0: rejected naming both versions", false, err != nil && strings.Contains(err.Error(), "no common protocol version") &&
		strings.Contains(err.Error(), "1.0.0") && strings.Contains(err.Error(), "0.9.0"), "%v", err)
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// mcp posts body to the MCP face with the session and protocol-version headers when set.
func (e *env) mcp(ctx context.Context, tok, session, version, body string, headers ...string) (int, http.Header, []byte, error) {
	h := []string{"Accept", "application/json, text/event-stream"}
	if session != "" {
		h = append(h, "Mcp-Session-Id", session)
	}
	if version != "" {
		h = append(h, "Mcp-Protocol-Version", version)
	}
	return e.send(ctx, http.MethodPost, "/mcp", tok, body, append(h, headers...)...)
}

// mcpDelete ends an MCP session.
func (e *env) mcpDelete(ctx context.Context, tok, session string) {
	_, _, _, _ = e.send(ctx, http.MethodDelete, "/mcp", tok, "", "Mcp-Session-Id", session)
}

// a2a posts body to the A2A face with the A2A-Version header when set.
func (e *env) a2a(ctx context.Context, tok, version, body string) (int, []byte, error) {
	var h []string
	if version != "" {
		h = append(h, "A2A-Version", version)
	}
	st, _, b, err := e.send(ctx, http.MethodPost, "/a2a", tok, body, h...)
	return st, b, err
}

// ---- 7. circuit breaker --------------------------------------------------------------

// circuitBreaker: the flaky backend fails; its breaker opens after at most min_requests
// calls (-32021 CIRCUIT_OPEN naming the backend, state open); while open, calls fail fast
// and never reach it; once it heals, after open_duration a half-open probe goes through and
// the breaker closes: calls are served with the right result again.
func circuitBreaker(ctx context.Context, e *env, r *rec, i int) {
	tok, err := token(fmt.Sprintf("breaker-%d", i), "calc:read")
	if !r.check("caller token", false, err == nil, "%v", err) {
		return
	}
	call := func(id int) response {
		var resp response
		r.timed(func() {
			resp, _, err = e.call(ctx, tok, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"flaky.subtract","params":[%d,2]}`, id, 10+i))
		})
		if err != nil {
			return response{Error: &rpcError{Code: -1, Message: err.Error()}}
		}
		return resp
	}
	e.flky.fail.Store(true)
	before := e.flky.count("Subtract")
	var open response
	failures := 0
	for k := range breakerMin + 2 {
		resp := call(k)
		if code(resp) == -32021 {
			open = resp
			break
		}
		if code(resp) == -32020 {
			failures++
		}
	}
	reached := e.flky.count("Subtract") - before
	r.check("opens after at most min_requests failures", false, open.Error != nil && failures >= 1 && failures <= breakerMin && reached == failures,
		"%d failures (%d reached the backend) before CIRCUIT_OPEN %+v", failures, reached, open.Error)
	r.check("CIRCUIT_OPEN names the backend and its state", false, open.errData("backend") == "flaky" && open.errData("state") == "open", "%+v", open.Error)

	before = e.flky.count("Subtract")
	fast := 0
	for k := range 3 {
		if code(call(100+k)) == -32021 {
			fast++
		}
	}
	r.check("open: fails fast", false, fast == 3, "%d of 3 calls answered CIRCUIT_OPEN", fast)
	r.check("open: the backend is not called", false, e.flky.count("Subtract") == before, "%d calls reached it", e.flky.count("Subtract")-before)

	e.flky.fail.Store(false)
	time.Sleep(breakerOpen)
	var probe response
	werr := waitFor(5*time.Second, func() bool {
		probe = call(200)
		return code(probe) != -32021
	})
	r.check("half-open: the probe goes through and is served", true, werr == nil && probe.Error == nil && string(probe.Result) == strconv.Itoa(8+i),
		"%v %s %+v", werr, probe.Result, probe.Error)
	closed := call(201)
	r.check("closed again: served", true, closed.Error == nil && string(closed.Result) == strconv.Itoa(8+i), "%s %+v", closed.Result, closed.Error)
}
