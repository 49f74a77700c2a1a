package server

// The load of TestPromQLExpressionsReturnData: one gateway with every part the shipped
// dashboards and alerts watch, and calls that make each of their series exist.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// promqlConfig serves every face (JSON-RPC over HTTP and WebSocket, the MCP face, NEKTE) in
// front of a calculator.v1 gRPC backend (%[1]s) that gets hop tokens, the demo MCP server
// over HTTP (%[2]s) and the test's targets; JWT callers (secret %[3]q) beside anonymous ones,
// a key ring, a policy holding destroy for approval, a rate limit, retries, breakers and
// admission with a one-call backend (gate). The MCP face's session key is %[4]s.
const promqlConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
websocket: {}
mcp_face: {session_key: %[4]s}
nekte: {}
deadline: {default: 2m, max: 10m}
auth:
  anonymous: {}
  jwt:
    issuers:
      - {issuer: "https://idp.test", audiences: [gatehouse], secret: %[3]q}
  keyring: {issuer: gatehouse, algorithm: EdDSA}
log: {level: debug}
routing:
  grpc:
    - name: calculator
      address: %[1]q
      descriptors: {reflection: true}
      methods: {subtract: calculator.v1.CalculatorService/Subtract}
      services:
        - {service: calculator.v1.CalculatorService, prefix: "calc.", naming: snake}
      unwrap: {subtract: result}
      downstream_token: {audience: calc}
  mcp:
    direct_zones: [external]
    servers:
      - name: demo
        http: {url: %[2]q}
policy:
  default: allow
  zones:
    external: {reach: [builtin, grpc, mcp, nekte]}
  rules:
    - {id: read, match: {method: flaky.read}, mutation: READ_ONLY}
    - {id: destroy, match: {method: destroy}, mutation: DESTRUCTIVE}
approvals: {poll_interval: 5ms}
rate_limits:
  rules:
    - {name: limited, match: "limited*", rate: 1/h}
retries: {backoff: 1ms}
breakers:
  default: {min_requests: 3, failure_ratio: 0.5, window: 10s, open_duration: 10m, half_open_probes: 1}
admission:
  backends:
    gate: {max_concurrency: 1, queue: 1, throttle: 10ms, max_wait: 10s}
`

// gateTarget holds every call until release is closed (or the call's context ends).
type gateTarget struct{ release chan struct{} }

func (g *gateTarget) Name() string { return "gate" }

func (g *gateTarget) Invoke(ctx context.Context, _ *gateway.Call) (*gateway.Result, error) {
	select {
	case <-g.release:
		return gateway.NewResult([]byte(`"passed"`)), nil
	case <-ctx.Done():
		return nil, gateway.AsError(ctx.Err())
	}
}

// promqlGateway is the gateway of promqlConfig and its test targets.
type promqlGateway struct {
	*testServer
	flaky *switchTarget // fails once before the request is sent, then answers: one retry
	gate  *gateTarget
}

// startPromQLGateway starts the gateway of promqlConfig with its backends and waits until
// it is ready.
func startPromQLGateway(t *testing.T) *promqlGateway {
	t.Helper()
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	g := &promqlGateway{flaky: &switchTarget{name: "flaky"}, gate: &gateTarget{release: make(chan struct{})}}
	broken := &switchTarget{name: "broken", err: gateway.NewError(schemas.CodeInternal).With("backend", "broken")}
	yaml := fmt.Sprintf(promqlConfig, addr, demoUpstream(t, demo.MCPOptions{}), callerSecret, testSessionKey)
	g.testServer = start(t, yaml, map[string]gateway.Target{
		"flaky.read":   g.flaky,
		"broken.call":  broken,
		"gate.call":    g.gate,
		"destroy":      &switchTarget{name: "vault"},
		"limited.call": &switchTarget{name: "limited"},
		"test.hold":    holdTarget{},
	})
	g.waitReadyWithin(20 * time.Second)
	waitForTools(t, g.testServer)
	return g
}

// driveAll makes every series of the shipped expressions exist; each step checks its
// calls answered as they must. It returns once nothing is left in flight but one call held
// for approval, which stays pending until the test ends.
func (g *promqlGateway) driveAll(t *testing.T) {
	t.Helper()
	steps := []struct {
		name string
		run  func(*testing.T)
	}{
		{"HTTP JSON-RPC and batch", g.driveHTTP},
		{"WebSocket", g.driveWebSocket},
		{"MCP face", g.driveMCPFace},
		{"JWT and hop tokens", g.driveTokens},
		{"retry, breaker, rate limit", g.driveResilience},
		{"admission", g.driveAdmission},
		{"NEKTE tasks", g.driveTasks},
		{"refused reload", g.driveReload},
		{"pending approval", g.driveApproval},
	}
	for _, s := range steps {
		s.run(t)
		if t.Failed() {
			t.Fatalf("driving %s failed", s.name)
		}
	}
}

// wantAnswer posts body with header and fails unless the answer contains want.
func (g *promqlGateway) wantAnswer(t *testing.T, body, want string, header ...string) {
	t.Helper()
	if _, _, got := g.post(body, header...); !strings.Contains(got, want) {
		t.Errorf("%s: answer %s lacks %s", body, got, want)
	}
}

// driveHTTP: successes and errors over HTTP, one batch of both, a transcoded gRPC call, a
// server-streaming RPC (grpc_active_streams) and an MCP tool through the bridge.
func (g *promqlGateway) driveHTTP(t *testing.T) {
	g.wantAnswer(t, `{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`, `"result":19`)
	g.wantAnswer(t, `{"jsonrpc":"2.0","method":"no.such.method","id":2}`, `"code":-32601`)
	g.wantAnswer(t, `[{"jsonrpc":"2.0","method":"subtract","params":[5,3],"id":3},{"jsonrpc":"2.0","method":"nope","id":4}]`, `"result":2`)
	g.wantAnswer(t, `{"jsonrpc":"2.0","method":"calc.count","params":{"from":1,"to":2},"id":5}`, `{"value":"2"}`)
	g.wantAnswer(t, `{"jsonrpc":"2.0","method":"mcp.test_simple_text","params":{},"id":6}`, `simple text response`)
}

// driveWebSocket: a success and an error over the WebSocket face.
func (g *promqlGateway) driveWebSocket(t *testing.T) {
	c := dialWS(t, g.testServer, nil)
	for _, tt := range []struct{ send, want string }{
		{`{"jsonrpc":"2.0","method":"subtract","params":[9,4],"id":"w1"}`, `"result":5`},
		{`{"jsonrpc":"2.0","method":"no.such.method","id":"w2"}`, `"code":-32601`},
	} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(tt.send)); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, msg, err := c.ReadMessage()
		if err != nil || !strings.Contains(string(msg), tt.want) {
			t.Errorf("WebSocket %s: %s, %v; want %s", tt.send, msg, err, tt.want)
		}
	}
}

// driveMCPFace: a tool call and a call of an unknown tool through the MCP face.
func (g *promqlGateway) driveMCPFace(t *testing.T) {
	c := streamableClient(t, g.base+"/mcp")
	callSimpleText(t, c)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "no_such_tool"
	if res, err := c.CallTool(ctx, req); err == nil && !res.IsError {
		t.Errorf("calling an unknown tool through the MCP face succeeded: %+v", res)
	}
}

// driveTokens: a JWT caller's calls to the backend that gets a hop token (verified, then
// from the cache; minted for each), and a token whose signature is wrong (refused).
func (g *promqlGateway) driveTokens(t *testing.T) {
	token := callerToken(t, "alice", "calc:read")
	for range 2 {
		g.wantAnswer(t, `{"jsonrpc":"2.0","method":"subtract","params":[7,2],"id":1}`, `"result":5`, "Authorization", "Bearer "+token)
	}
	forged := token[:strings.LastIndexByte(token, '.')+1] + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	if status, _, body := g.post(`{"jsonrpc":"2.0","method":"subtract","params":[7,2],"id":1}`, "Authorization", "Bearer "+forged); status == 200 && !strings.Contains(body, `"error"`) {
		t.Errorf("a forged token was accepted: %d %s", status, body)
	}
}

// driveResilience: one call retried after a failure that never reached its backend; a
// backend failing with internal errors until its breaker opens; a call over a rate limit.
func (g *promqlGateway) driveResilience(t *testing.T) {
	g.flaky.set(nil, errFlakyDown.Wrap(errors.New("connection refused")).NotSent())
	g.wantAnswer(t, `{"jsonrpc":"2.0","method":"flaky.read","id":1}`, `"result":"ok"`)
	opened := false
	for range 10 {
		if r := decodeOne(t, mustBody(g.post(`{"jsonrpc":"2.0","method":"broken.call","id":2}`))); r.Error != nil && r.Error.Code == int(schemas.CodeCircuitOpen) {
			opened = true
			break
		}
	}
	if !opened {
		t.Error("the breaker of the failing backend never opened")
	}
	g.wantAnswer(t, `{"jsonrpc":"2.0","method":"limited.call","id":3}`, `"result":"ok"`)
	g.wantAnswer(t, `{"jsonrpc":"2.0","method":"limited.call","id":4}`, fmt.Sprintf(`"code":%d`, schemas.CodeRateLimited))
}

// driveAdmission: calls to the one-call gate backend beyond its queue, while it holds the
// first, until admission sheds one; then the gate opens and the queued calls pass.
func (g *promqlGateway) driveAdmission(t *testing.T) {
	const calls = 6
	answers := make(chan string, calls)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for i := range calls {
		go func() {
			answers <- <-g.callAsync(ctx, fmt.Sprintf(`{"jsonrpc":"2.0","method":"gate.call","id":%d}`, i))
		}()
	}
	shed, passed, seen := 0, 0, 0
	released := false
	for seen < calls {
		var a string
		select {
		case a = <-answers:
		case <-ctx.Done():
			t.Fatalf("admission: %d of %d answers (%d shed) before the deadline", seen, calls, shed)
		}
		seen++
		switch {
		case strings.Contains(a, fmt.Sprintf(`"code":%d`, schemas.CodeOverloaded)):
			shed++
		case strings.Contains(a, `"result":"passed"`):
			passed++
		default:
			t.Errorf("admission: unexpected answer %q", a)
		}
		if shed > 0 && !released {
			close(g.gate.release)
			released = true
		}
	}
	if shed == 0 || passed == 0 {
		t.Errorf("admission: %d shed, %d passed of %d; want both", shed, passed, calls)
	}
}

// driveTasks: one delegated task cancelled, one suspended, resumed and completed.
func (g *promqlGateway) driveTasks(t *testing.T) {
	n := &nekteGolden{ts: g.testServer}
	delegate := func(id string) *goldenReply {
		return n.send(t, httpFace, fmt.Sprintf(`{"jsonrpc":"2.0","method":"nekte.delegate","params":{"task":{"id":%q,"desc":"hold","timeout_ms":60000,"budget":{"max_tokens":500,"detail_level":"full"},"cap":"hold"}},"id":1}`, id))
	}
	task := func(method, id, want string) {
		if m := result(t, g.rpc(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":{"task_id":%q},"id":2}`, method, id))); m["status"] != want {
			t.Errorf("%s %s: %v, want %s", method, id, m, want)
		}
	}
	cancelled := delegate("p-cancel")
	cancelled.waitFor(t, `"processed":1`)
	task("nekte.task.cancel", "p-cancel", "cancelled")
	cancelled.wait(t)

	completed := delegate("p-complete")
	completed.waitFor(t, `"processed":1`)
	task("nekte.task.suspend", "p-complete", "suspended")
	task("nekte.task.resume", "p-complete", "running")
	if body := completed.wait(t).body; !strings.Contains(body, `"completed"`) {
		t.Errorf("the resumed task did not complete: %s", body)
	}
}

// driveReload: a configuration file that does not parse is refused.
func (g *promqlGateway) driveReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(path, []byte("server: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := g.ReloadFile(path); err == nil {
		t.Error("reloading a file that does not parse succeeded")
	}
}

// driveApproval: a DESTRUCTIVE call held for approval, left pending until the test ends
// (its caller then goes away, which withdraws it).
func (g *promqlGateway) driveApproval(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	answer := g.callAsync(ctx, `{"jsonrpc":"2.0","method":"destroy","id":1}`)
	t.Cleanup(func() {
		cancel()
		<-answer
	})
	waitFor(t, func() bool { return strings.Contains(g.logs.String(), "call held for approval") })
}
