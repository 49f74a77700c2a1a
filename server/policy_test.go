package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/gateway"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// decisionTarget answers with the policy decision its call carries.
type decisionTarget struct{}

func (decisionTarget) Name() string { return "decision" }

func (decisionTarget) Invoke(ctx context.Context, _ *gateway.Call) (*gateway.Result, error) {
	d, ok := policy.DecisionFrom(ctx)
	out, err := json.Marshal(map[string]any{"decided": ok, "rule": d.Rule, "needs_approval": d.NeedsApproval, "mutation": d.Mutation})
	if err != nil {
		return nil, err
	}
	return gateway.NewResult(out), nil
}

// policyConfig serves the calculator gRPC backend at %s and the decision target under
// "echo.*", with anonymous callers holding the scope "read".
const policyConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  internal: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth: {anonymous: {scopes: [read]}}
log: {level: debug}
routing:
  grpc:
    - name: calculator
      address: "%s"
      descriptors: {reflection: true}
      methods:
        subtract: calculator.v1.CalculatorService/Subtract
        sum: calculator.v1.CalculatorService/Sum
      unwrap: {subtract: result, sum: result}
policy:
  zones:
    external: {reach: [builtin, nekte]}
  rules:
    - {id: echo, match: {method: "echo.*"}, scopes: [read], mutation: READ_ONLY}
    - {id: write, match: {method: "echo.write"}, scopes: [read, write, admin]}
    - {id: destroy, match: {method: "echo.destroy"}, scopes: [read], mutation: DESTRUCTIVE, approval: false}
    - {id: tenant, match: {method: "echo.tenant"}, scopes: [read], when: 'params.tenant == "acme"'}
    - {id: subtract, match: {method: subtract}, scopes: [read], mutation: READ_ONLY}
    - {id: sum, match: {grpc_method: "calculator.v1.CalculatorService/Sum"}, scopes: [read, calc]}
`

func startPolicy(t *testing.T) *testServer {
	t.Helper()
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	targets := map[string]gateway.Target{}
	for _, m := range []string{"echo.read", "echo.write", "echo.destroy", "echo.tenant", "other"} {
		targets[m] = decisionTarget{}
	}
	ts := start(t, fmt.Sprintf(policyConfig, addr), targets)
	ts.waitReadyWithin(20 * time.Second)
	return ts
}

func TestPolicyOverHTTP(t *testing.T) {
	ts := startPolicy(t)
	tests := []struct {
		name       string
		method     string
		params     string
		wantCode   int // 0: a result
		wantResult string
		wantData   map[string]any
	}{
		{"allowed, decision carried", "echo.read", `{}`, 0,
			`{"decided":true,"mutation":"READ_ONLY","needs_approval":false,"rule":"echo"}`, nil},
		// DESTRUCTIVE needs approval unless its rule says otherwise; held calls are tested in approval_test.go.
		{"destructive with approval: false runs", "echo.destroy", `{}`, 0,
			`{"decided":true,"mutation":"DESTRUCTIVE","needs_approval":false,"rule":"destroy"}`, nil},
		{"missing scopes listed", "echo.write", `{}`, 4002, "", map[string]any{"missing_scopes": []any{"write", "admin"}}},
		{"condition holds", "echo.tenant", `{"tenant":"acme"}`, 0,
			`{"decided":true,"mutation":"NON_IDEMPOTENT_WRITE","needs_approval":false,"rule":"tenant"}`, nil},
		{"condition fails", "echo.tenant", `{"tenant":"evil"}`, 4000, "", map[string]any{"reason": "condition"}},
		{"case-variant params refused", "echo.tenant", `{"tenant":"acme","TENANT":"evil"}`, -32602, "", nil},
		{"no rule: default deny", "other", `{}`, 4000, "", map[string]any{"reason": "no_rule"}},
		{"zone: external does not reach grpc", "subtract", `[3,1]`, 4000, "", map[string]any{"zone": "external", "target": "grpc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, hdr, body := ts.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, tt.method, tt.params))
			// A JSON-RPC error inside a JSON-RPC response travels with HTTP 200, but for the
			// codes HTTP clients act on without reading the body (retryafter.go): 4002 is a
			// 403 with the insufficient_scope challenge.
			wantStatus, wantChallenge := http.StatusOK, ""
			if tt.wantCode == 4002 {
				wantStatus, wantChallenge = http.StatusForbidden, `Bearer realm="gatehouse", error="insufficient_scope", scope="write admin"`
			}
			if code != wantStatus || hdr.Get("WWW-Authenticate") != wantChallenge {
				t.Fatalf("HTTP %d %q, want %d %q: %s", code, hdr.Get("WWW-Authenticate"), wantStatus, wantChallenge, body)
			}
			r := decodeOne(t, body)
			if tt.wantCode == 0 {
				if r.Error != nil || string(r.Result) != tt.wantResult {
					t.Fatalf("got %s, want result %s", body, tt.wantResult)
				}
				return
			}
			if r.Error == nil || r.Error.Code != tt.wantCode {
				t.Fatalf("got %s, want error %d", body, tt.wantCode)
			}
			for k, v := range tt.wantData {
				if fmt.Sprint(r.Error.Data[k]) != fmt.Sprint(v) {
					t.Errorf("data.%s = %v, want %v", k, r.Error.Data[k], v)
				}
			}
			if _, ok := r.Error.Data["trace_id"]; !ok {
				t.Errorf("data has no trace_id: %s", body)
			}
		})
	}
}

func TestPolicyOverInternalGRPC(t *testing.T) {
	ts := startPolicy(t)
	conn, err := grpc.NewClient(ts.InternalAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	client := gatehousev1.NewGatewayServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// The internal zone reaches gRPC backends; subtract needs only "read".
	if r, err := client.Invoke(ctx, &gatehousev1.InvokeRequest{Method: "subtract", Params: []byte(`[42,23]`)}); err != nil || string(r.GetResult()) != "19" {
		t.Fatalf("subtract: %v %v", r, err)
	}
	tests := []struct {
		name, method, params string
		jsonrpc, data        string
	}{
		{"grpc_method rule, missing scope", "sum", `[1,2]`, "4002", `"missing_scopes":["calc"]`},
		{"method rule, missing scopes", "echo.write", `{}`, "4002", `"missing_scopes":["write","admin"]`},
		{"condition", "echo.tenant", `{"tenant":"x"}`, "4000", `"reason":"condition"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.Invoke(ctx, &gatehousev1.InvokeRequest{Method: tt.method, Params: []byte(tt.params)})
			st := status.Convert(err)
			if st.Code() != codes.PermissionDenied {
				t.Fatalf("%v, want PermissionDenied", err)
			}
			info, _ := st.Details()[0].(*errdetails.ErrorInfo)
			if info == nil || info.GetMetadata()["jsonrpc_code"] != tt.jsonrpc || !strings.Contains(info.GetMetadata()["data"], tt.data) {
				t.Errorf("details %v, want code %s and data with %s", st.Details(), tt.jsonrpc, tt.data)
			}
		})
	}
}

func TestPolicyConfigErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"condition does not compile", "policy:\n  rules:\n    - {match: {method: a}}\n    - {match: {method: b}, when: 'claims.x =='}\n",
			"policy.rules[1].when"},
		{"undeclared variable", "policy:\n  rules:\n    - {match: {method: a}, when: 'user == 1'}\n", "undeclared reference to 'user'"},
		{"two match keys", "policy:\n  rules:\n    - {match: {method: a, capability: b}}\n", "policy.rules[0]"},
		{"unknown kind", "policy:\n  zones:\n    external: {reach: [web]}\n", "policy.zones.external.reach"},
		{"unknown zone", "policy:\n  zones:\n    dmz: {reach: [grpc]}\n", "dmz"},
		{"unknown key", "policy:\n  rules:\n    - {match: {method: a}, scope: [x]}\n", "scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "p.yaml:") {
				t.Fatalf("err = %v, want one naming p.yaml and %q", err, tt.want)
			}
		})
	}
	_, pre, err := parse("p.yaml", []byte("policy:\n  default: allow\n  rules:\n    - {match: {mcp_tool: 'files/*'}, scopes: [files], when: 'params.path != \"/\"'}\n"))
	if err != nil || pre.policy == nil {
		t.Fatalf("a valid policy: %v (compiled: %v)", err, pre != nil && pre.policy != nil)
	}
}
