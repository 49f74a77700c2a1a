package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	"github.com/gatehouse-dev/gatehouse/internal/hoptest"
	"github.com/gatehouse-dev/gatehouse/internal/mcptest"
	"github.com/gatehouse-dev/gatehouse/internal/otelstack"
)

// callerSecret signs the callers' tokens (HS256, issuer https://idp.gate).
const callerSecret = "gate-caller-secret-0123456789abcdef0123456789" //nolint:gosec // a test identity provider's key, on loopback only

// Names the environment uses more than once.
const (
	service    = "gatehouse"         // the gateway's service name, audience and issuer of hop tokens
	objectJSON = `{"type":"object"}` // the schema of an operator taking or giving any object
)

// Timing of the environment: an agent lapses after missedBeats heartbeats of beatEvery
// (2s of silence, far above a loaded machine's scheduling delays); the flaky backend's
// breaker opens after breakerMin judged calls and stays open breakerOpen.
const (
	beatEvery   = 250 * time.Millisecond
	missedBeats = 8
	breakerMin  = 3
	breakerOpen = 300 * time.Millisecond
	reserve     = 100 * time.Millisecond
	epsilon     = 50 * time.Millisecond
)

// gatewayConfig: JWT callers and a key ring minting hop tokens; three instances of the
// real gRPC calculator (calc, slow, flaky), the demo MCP server as a stdio child, the demo
// methods (the A2A skills), the agent link with heartbeats, the A2A face, a breaker on the
// flaky backend only, a policy requiring scopes, and every span exported to Jaeger.
const gatewayConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  internal: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  jwt:
    issuers:
      - {issuer: "https://idp.gate", audiences: [gatehouse], secret: %[1]q}
  keyring: {issuer: gatehouse, algorithm: EdDSA}
log: {level: info}
deadline: {reserve: %[9]s, min_remaining: %[10]s}
routing:
  demo: {}
  grpc:
    - name: calc
      address: %[2]q
      descriptors: {reflection: true}
      methods: {calc.subtract: calculator.v1.CalculatorService/Subtract, calc.sum: calculator.v1.CalculatorService/Sum}
      unwrap: {calc.subtract: result, calc.sum: result}
      downstream_token: {audience: calc}
    - name: slow
      address: %[3]q
      descriptors: {reflection: true}
      methods: {slow.subtract: calculator.v1.CalculatorService/Subtract}
      unwrap: {slow.subtract: result}
    - name: flaky
      address: %[4]q
      descriptors: {reflection: true}
      methods: {flaky.subtract: calculator.v1.CalculatorService/Subtract}
      unwrap: {flaky.subtract: result}
  mcp:
    direct_zones: [external]
    servers:
      - name: demo
        stdio: {command: %[5]q, args: [demo-mcp]}
agents:
  heartbeat_interval: %[6]s
  missed_heartbeats: %[7]d
  dispatch_timeout: 10s
  auth: {allow_loopback_anonymous: true}
a2a: {}
nekte: {}
mcp_face: {}
breakers:
  default: {min_requests: 1000000}
  backends:
    flaky: {min_requests: %[11]d, failure_ratio: 0.5, window: 10s, open_duration: %[12]s, half_open_probes: 1}
policy:
  default: allow
  zones:
    external: {reach: [builtin, grpc, mcp, nekte]}
  rules:
    - {id: sum, match: {method: calc.sum}, scopes: ["calc:write"], mutation: READ_ONLY}
    - {id: calc, match: {method: "calc.*"}, scopes: ["calc:read"], mutation: READ_ONLY}
tracing: {endpoint: %[8]q, protocol: grpc, insecure: true, export_interval: 50ms}
`

// backend is a real gRPC calculator (package demo) whose calls the scenarios observe: what
// reached it, the deadline and the authorization it carried; it can be made to fail
// (UNAVAILABLE) or to hang until the call's deadline.
type backend struct {
	addr   string
	fail   atomic.Bool
	hang   atomic.Bool
	mu     sync.Mutex
	calls  map[string]int
	seen   []seen
	server *grpc.Server
}

// seen is one call as the backend saw it.
type seen struct {
	method   string
	deadline time.Time
	auth     []string
}

func startBackend() (*backend, error) {
	b := &backend{calls: map[string]int{}}
	b.server = demo.NewCalculatorServer(grpc.ChainUnaryInterceptor(
		func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			dl, _ := ctx.Deadline()
			name := info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]
			b.mu.Lock()
			b.calls[name]++
			b.seen = append(b.seen, seen{method: name, deadline: dl, auth: md.Get("authorization")})
			if len(b.seen) > 64 {
				b.seen = b.seen[len(b.seen)-64:]
			}
			b.mu.Unlock()
			if b.hang.Load() {
				<-ctx.Done()
				return nil, status.FromContextError(ctx.Err()).Err()
			}
			if b.fail.Load() {
				return nil, status.Error(codes.Unavailable, "the calculator is down")
			}
			return h(ctx, req)
		}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b.addr = ln.Addr().String()
	go func() { _ = b.server.Serve(ln) }()
	return b, nil
}

// count is how many calls of method (Subtract, Sum) reached the backend.
func (b *backend) count(method string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[method]
}

// last is the latest call of method the backend saw.
func (b *backend) last(method string) (seen, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range slices.Backward(b.seen) {
		if s.method == method {
			return s, true
		}
	}
	return seen{}, false
}

// env is the world the scenarios run in.
type env struct {
	gw               *hardening.Gateway
	jaeger           *otelstack.Jaeger
	calc, slow, flky *backend
	hop              *hoptest.Verifier
	client           *http.Client
	agentDeadline    chan time.Time // deadlines the agent's "wait" operator saw
	agentIDs         atomic.Int64
	logger           *slog.Logger
	pending          []pendingTrace // the happy path's traces, checked in Jaeger at the end
}

// token returns a caller token for sub with scopes.
func token(sub string, scopes ...string) (string, error) {
	return jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"iss": "https://idp.gate", "aud": service, "sub": sub, "scope": strings.Join(scopes, " "),
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(callerSecret))
}

// buildGatehouse builds the gatehouse binary (the demo MCP server is its demo-mcp command).
func buildGatehouse(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gatehouse")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/gatehouse") //nolint:gosec // a path of the run's own temporary directory
	cmd.Dir = mcptest.RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building gatehouse: %v\n%s", err, out)
	}
	return bin
}

// setup starts Jaeger, the backends, the gateway and the reference agent.
func setup(t testing.TB) *env {
	t.Helper()
	e := &env{client: &http.Client{Timeout: 30 * time.Second}, agentDeadline: make(chan time.Time, 64),
		logger: slog.New(slog.DiscardHandler)}
	e.jaeger = otelstack.StartJaeger(t)
	bin := buildGatehouse(t)
	for _, b := range []**backend{&e.calc, &e.slow, &e.flky} {
		nb, err := startBackend()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nb.server.Stop)
		*b = nb
	}
	e.gw = hardening.Start(t, fmt.Sprintf(gatewayConfig, callerSecret, e.calc.addr, e.slow.addr, e.flky.addr, bin,
		beatEvery, missedBeats, e.jaeger.OTLPGRPC, reserve, epsilon, breakerMin, breakerOpen))
	t.Cleanup(e.client.CloseIdleConnections)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := hoptest.NewVerifier(ctx, e.gw.Base+httprpc.JWKSPath, service, "calc", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e.hop = v
	e.startAgent(t, "gate-agent", "", e.operators())
	// the MCP child answers once the catalog has its tools
	if err := waitFor(30*time.Second, func() bool {
		r, _, err := e.call(context.Background(), e.mustToken(t, "warm"), `{"jsonrpc":"2.0","id":1,"method":"mcp.test_simple_text","params":{}}`)
		return err == nil && r.Error == nil
	}); err != nil {
		t.Fatalf("the demo MCP server's tools never answered: %v\n%s", err, e.gw.Logs())
	}
	return e
}

func (e *env) mustToken(t testing.TB, sub string, scopes ...string) string {
	t.Helper()
	tok, err := token(sub, scopes...)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// startAgent runs an in-process reference agent with ops until the run ends (or stop is
// called), reconnecting should its link end, and waits until the gateway lists it.
func (e *env) startAgent(t testing.TB, id, fault string, ops []demo.AgentOperator) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = demo.RunAgent(ctx, demo.AgentOptions{Addr: e.gw.Internal, ID: id, Fault: fault, Operators: ops, Logger: e.logger, MaxConcurrent: 8, Reconnect: true})
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	if err := waitFor(15*time.Second, func() bool { return e.agentListed(id) }); err != nil {
		t.Fatalf("agent %s did not connect: %v", id, err)
	}
	return stop
}

// agentListed says whether /readyz lists the agent id.
func (e *env) agentListed(id string) bool {
	resp, err := e.client.Get(e.gw.Admin + "/readyz")
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	var ready struct {
		Agents []struct {
			ID string `json:"id"`
		} `json:"agents"`
	}
	if json.NewDecoder(resp.Body).Decode(&ready) != nil {
		return false
	}
	for _, a := range ready.Agents {
		if a.ID == id {
			return true
		}
	}
	return false
}

// operators are the gate agent's: plan (it calls the calculator through the gateway, a
// tool call of its own), wait (it records its deadline and waits for it) and fail.
func (e *env) operators() []demo.AgentOperator {
	num := `{"type":"number"}`
	in := `{"type":"object","properties":{"minuend":` + num + `,"subtrahend":` + num + `},"required":["minuend","subtrahend"]}`
	return []demo.AgentOperator{
		{ID: "plan", Description: "Subtracts by calling calc.subtract through the gateway.", Input: in, Output: objectJSON, TypicalMs: 5,
			Run: func(ctx context.Context, task demo.AgentTask) ([]byte, error) {
				tok, err := token("gate-agent", "calc:read")
				if err != nil {
					return nil, err
				}
				r, h, err := e.call(ctx, tok, `{"jsonrpc":"2.0","id":"tool","method":"calc.subtract","params":`+string(task.Input)+`}`)
				if err != nil {
					return nil, err
				}
				if r.Error != nil {
					return nil, fmt.Errorf("calc.subtract: %d %s", r.Error.Code, r.Error.Message)
				}
				return json.Marshal(map[string]any{"difference": r.Result, "tool_trace": h.Get("X-Trace-Id")})
			}},
		{ID: "wait", Description: "Waits for its deadline.", Input: objectJSON, Output: objectJSON, TypicalMs: 5,
			Run: func(ctx context.Context, _ demo.AgentTask) ([]byte, error) {
				dl, _ := ctx.Deadline()
				select {
				case e.agentDeadline <- dl:
				default:
				}
				<-ctx.Done()
				return nil, ctx.Err()
			}},
		{ID: "fail", Description: "Fails with the reason it is given.", Input: `{"type":"object","properties":{"reason":{"type":"string"}}}`, Output: objectJSON, TypicalMs: 1,
			Run: func(_ context.Context, task demo.AgentTask) ([]byte, error) {
				var in struct{ Reason string }
				_ = json.Unmarshal(task.Input, &in)
				return nil, errors.New(in.Reason)
			}},
		{ID: "digest", Description: "SHA-256 of text.", Input: `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, Output: objectJSON, TypicalMs: 1,
			Run: func(_ context.Context, task demo.AgentTask) ([]byte, error) {
				var in struct{ Text string }
				if err := json.Unmarshal(task.Input, &in); err != nil {
					return nil, err
				}
				sum := sha256.Sum256([]byte(in.Text))
				return json.Marshal(map[string]string{"sha256": hex.EncodeToString(sum[:])})
			}},
	}
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data"` // an object, or A2A's array of details
}

// response is one JSON-RPC response, with what the schema check needs.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
	raw     map[string]json.RawMessage
}

// schemaOK says whether r is a well-formed JSON-RPC 2.0 response with id want: jsonrpc
// "2.0", the id echoed, exactly one of result and error, nothing else.
func (r response) schemaOK(want string) error {
	if r.JSONRPC != "2.0" {
		return fmt.Errorf("jsonrpc %q", r.JSONRPC)
	}
	if string(r.ID) != want {
		return fmt.Errorf("id %s, want %s", r.ID, want)
	}
	_, hasResult := r.raw["result"]
	_, hasError := r.raw["error"]
	if hasResult == hasError {
		return fmt.Errorf("result %v and error %v", hasResult, hasError)
	}
	for k := range r.raw {
		if k != "jsonrpc" && k != "id" && k != "result" && k != "error" {
			return fmt.Errorf("member %q", k)
		}
	}
	if hasError && (r.Error == nil || r.Error.Code == 0 || r.Error.Message == "") {
		return fmt.Errorf("error without code or message: %s", r.raw["error"])
	}
	return nil
}

func decode(b []byte) (response, error) {
	var r response
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%w: %.200s", err, b)
	}
	if err := json.Unmarshal(b, &r.raw); err != nil {
		return r, err
	}
	return r, nil
}

// post sends body to the boundary's /rpc with the token ("" none) and header pairs.
func (e *env) post(ctx context.Context, tok, body string, headers ...string) (int, http.Header, []byte, error) {
	return e.send(ctx, http.MethodPost, "/rpc", tok, body, headers...)
}

// send sends body to path of the boundary with the token ("" none) and header pairs.
func (e *env) send(ctx context.Context, method, path, tok, body string, headers ...string) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, e.gw.Base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// call posts one request and decodes its one response.
func (e *env) call(ctx context.Context, tok, body string, headers ...string) (response, http.Header, error) {
	_, h, b, err := e.post(ctx, tok, body, headers...)
	if err != nil {
		return response{}, h, err
	}
	r, err := decode(b)
	return r, h, err
}

// waitFor polls cond every 10ms until it holds or within has passed.
func waitFor(within time.Duration, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", within)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
