package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// engine compiles cfg or fails the test.
func engine(t *testing.T, cfg policy.Config) *policy.Engine {
	t.Helper()
	e, err := policy.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

var testRules = []policy.Rule{
	{ID: "demo-any", Match: policy.Match{Method: "demo.*"}, Scopes: []string{"demo"}, Mutation: policy.ReadOnly},
	{ID: "demo-echo", Match: policy.Match{Method: "demo.echo"}, Scopes: []string{"echo"}},
	{ID: "demo-e", Match: policy.Match{Method: "demo.e*"}, Scopes: []string{"e"}},
	{ID: "cap", Match: policy.Match{Capability: "report.*"}, Scopes: []string{"reports"}},
	{ID: "tool", Match: policy.Match{MCPTool: "files/delete_*"}, Scopes: []string{"files:write"}, Mutation: policy.Destructive},
	{ID: "tool-exact", Match: policy.Match{MCPTool: "files/read"}, Scopes: []string{"files:read"}, Mutation: policy.ReadOnly},
	{ID: "grpc", Match: policy.Match{GRPCMethod: "/calculator.v1.Calculator/*"}, Scopes: []string{"calc"}, Mutation: policy.IdempotentWrite},
	{ID: "grpc-add", Match: policy.Match{GRPCMethod: "calculator.v1.Calculator/Add"}, Scopes: []string{"calc:add"}, Approval: new(true)},
	{ID: "method-vs-tool", Match: policy.Match{Method: "mcp.files__read"}, Scopes: []string{"never"}},
}

func TestDecideMatchAndSpecificity(t *testing.T) {
	e := engine(t, policy.Config{Rules: testRules})
	tests := []struct {
		name     string
		subject  policy.Subject
		wantRule string
	}{
		{"method glob", policy.Subject{Method: "demo.add", Kind: policy.KindBuiltin}, "demo-any"},
		{"exact beats glob", policy.Subject{Method: "demo.echo", Kind: policy.KindBuiltin}, "demo-echo"},
		{"more literal characters win among globs", policy.Subject{Method: "demo.error", Kind: policy.KindBuiltin}, "demo-e"},
		{"a longer capability glob beats a shorter method glob", policy.Subject{Method: "demo.x", Capability: "report.weekly", Kind: policy.KindGRPC}, "cap"},
		{"mcp tool glob", policy.Subject{Method: "mcp.files__delete_all", Kind: policy.KindMCP, MCPServer: "files", MCPTool: "delete_all"}, "tool"},
		{"exact tool beats exact method", policy.Subject{Method: "mcp.files__read", Kind: policy.KindMCP, MCPServer: "files", MCPTool: "read"}, "tool-exact"},
		{"exact method wins when the tool is unknown", policy.Subject{Method: "mcp.files__read", Kind: policy.KindMCP}, "method-vs-tool"},
		{"grpc glob, leading slash ignored", policy.Subject{Method: "calc.mul", Kind: policy.KindGRPC, GRPCMethod: "calculator.v1.Calculator/Mul"}, "grpc"},
		{"grpc exact", policy.Subject{Method: "calc.add", Kind: policy.KindGRPC, GRPCMethod: "/calculator.v1.Calculator/Add"}, "grpc-add"},
		{"no rule", policy.Subject{Method: "other", Kind: policy.KindBuiltin}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := e.Decide(policy.Input{Zone: gateway.ZoneInternal, Subject: tt.subject})
			if d.Rule != tt.wantRule {
				t.Errorf("rule = %q, want %q (%s)", d.Rule, tt.wantRule, d.Reason)
			}
		})
	}
}

func TestDecideScopesAndApproval(t *testing.T) {
	e := engine(t, policy.Config{Rules: testRules, ApprovalFor: []policy.Mutation{policy.Destructive, policy.NonIdempotentWrite}})
	tests := []struct {
		name         string
		subject      policy.Subject
		scopes       []string
		wantAllowed  bool
		wantMissing  []string
		wantMutation policy.Mutation
		wantApproval bool
	}{
		{"held", policy.Subject{Method: "demo.add"}, []string{"demo"}, true, nil, policy.ReadOnly, false},
		{"missing", policy.Subject{Method: "demo.add"}, []string{"other"}, false, []string{"demo"}, policy.ReadOnly, false},
		{"destructive needs approval", policy.Subject{Method: "m", Kind: policy.KindMCP, MCPServer: "files", MCPTool: "delete_x"},
			[]string{"files:write"}, true, nil, policy.Destructive, true},
		{"unclassified is a non-idempotent write", policy.Subject{Method: "demo.echo"}, []string{"echo"}, true, nil, policy.NonIdempotentWrite, true},
		{"approval: true overrides", policy.Subject{Method: "calc.add", Kind: policy.KindGRPC, GRPCMethod: "calculator.v1.Calculator/Add"},
			[]string{"calc:add"}, true, nil, policy.NonIdempotentWrite, true},
		{"idempotent write, no approval", policy.Subject{Method: "calc.mul", Kind: policy.KindGRPC, GRPCMethod: "calculator.v1.Calculator/Mul"},
			[]string{"calc"}, true, nil, policy.IdempotentWrite, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.subject.Kind == "" {
				tt.subject.Kind = policy.KindBuiltin
			}
			d := e.Decide(policy.Input{Zone: gateway.ZoneInternal, Subject: tt.subject, Principal: gateway.Principal{Scopes: tt.scopes}})
			if d.Allowed != tt.wantAllowed || !slices.Equal(d.Missing, tt.wantMissing) || d.Mutation != tt.wantMutation || d.NeedsApproval != tt.wantApproval {
				t.Errorf("got allowed=%v missing=%v mutation=%s approval=%v; want %v %v %s %v",
					d.Allowed, d.Missing, d.Mutation, d.NeedsApproval, tt.wantAllowed, tt.wantMissing, tt.wantMutation, tt.wantApproval)
			}
		})
	}
}

func TestInsufficientScopeError(t *testing.T) {
	e := engine(t, policy.Config{Rules: []policy.Rule{{Match: policy.Match{Method: "m"}, Scopes: []string{"a", "b", "c"}}}})
	d := e.Decide(policy.Input{Subject: policy.Subject{Method: "m", Kind: policy.KindBuiltin}, Principal: gateway.Principal{Scopes: []string{"b"}}})
	err := d.Err()
	if err == nil || err.Code() != schemas.CodeInsufficientScope {
		t.Fatalf("err = %v, want INSUFFICIENT_SCOPE", err)
	}
	if got := err.Data()["missing_scopes"]; !slices.Equal(got.([]string), []string{"a", "c"}) {
		t.Errorf("missing_scopes = %v, want [a c]", got)
	}
	if d.Rule != "rules[0]" {
		t.Errorf("rule id = %q, want the default rules[0]", d.Rule)
	}
}

func TestDefault(t *testing.T) {
	tests := []struct {
		def  string
		want bool
	}{{"", false}, {"deny", false}, {"allow", true}}
	for _, tt := range tests {
		t.Run("default="+tt.def, func(t *testing.T) {
			e := engine(t, policy.Config{Default: tt.def, Rules: testRules})
			d := e.Decide(policy.Input{Zone: gateway.ZoneExternal, Subject: policy.Subject{Method: "unlisted", Kind: policy.KindBuiltin}})
			if d.Allowed != tt.want {
				t.Fatalf("allowed = %v, want %v", d.Allowed, tt.want)
			}
			if !tt.want && (d.Err().Code() != schemas.CodeAuthorization || d.Err().Data()["reason"] != "no_rule") {
				t.Errorf("err = %v, want AUTHORIZATION_FAILED reason no_rule", d.Err())
			}
		})
	}
}

func TestZones(t *testing.T) {
	def := engine(t, policy.Config{Default: "allow"})
	custom := engine(t, policy.Config{Default: "allow", Zones: map[string]policy.ZoneConfig{
		"external": {Reach: []policy.Kind{policy.KindNekte}},
		"internal": {Reach: []policy.Kind{policy.KindGRPC}},
	}})
	tests := []struct {
		name    string
		e       *policy.Engine
		zone    gateway.TrustZone
		proto   gateway.Protocol
		subject policy.Subject
		want    bool
	}{
		{"external reaches grpc by default", def, gateway.ZoneExternal, gateway.ProtocolHTTP, policy.Subject{Kind: policy.KindGRPC}, true},
		{"external reaches builtin by default", def, gateway.ZoneExternal, gateway.ProtocolHTTP, policy.Subject{Kind: policy.KindBuiltin}, true},
		{"external does not reach mcp directly", def, gateway.ZoneExternal, gateway.ProtocolHTTP, policy.Subject{Kind: policy.KindMCP}, false},
		{"external reaches mcp as a capability", def, gateway.ZoneExternal, gateway.ProtocolHTTP, policy.Subject{Kind: policy.KindMCP, Capability: "c"}, true},
		{"external reaches mcp over the MCP face", def, gateway.ZoneExternal, gateway.ProtocolMCP, policy.Subject{Kind: policy.KindMCP}, true},
		{"internal reaches mcp by default", def, gateway.ZoneInternal, gateway.ProtocolGRPC, policy.Subject{Kind: policy.KindMCP}, true},
		{"configured external: no grpc", custom, gateway.ZoneExternal, gateway.ProtocolHTTP, policy.Subject{Kind: policy.KindGRPC}, false},
		{"configured external: capability counts as nekte", custom, gateway.ZoneExternal, gateway.ProtocolHTTP, policy.Subject{Kind: policy.KindGRPC, Capability: "c"}, true},
		{"configured internal: no builtin", custom, gateway.ZoneInternal, gateway.ProtocolGRPC, policy.Subject{Kind: policy.KindBuiltin}, false},
		{"unconfigured operator keeps its default", custom, gateway.ZoneOperator, gateway.ProtocolHTTP, policy.Subject{Kind: policy.KindBuiltin}, true},
		{"unknown zone", def, gateway.TrustZone(9), gateway.ProtocolHTTP, policy.Subject{Kind: policy.KindBuiltin}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.e.Decide(policy.Input{Zone: tt.zone, Protocol: tt.proto, Subject: tt.subject})
			if d.Allowed != tt.want {
				t.Fatalf("allowed = %v, want %v (%s)", d.Allowed, tt.want, d.Reason)
			}
			if !tt.want && tt.zone <= gateway.ZoneLocal {
				err := d.Err()
				if err.Code() != schemas.CodeAuthorization || err.Data()["zone"] != tt.zone.String() {
					t.Errorf("err = %v data %v, want AUTHORIZATION_FAILED with the zone", err, err.Data())
				}
			}
		})
	}
}

func TestCondition(t *testing.T) {
	e := engine(t, policy.Config{Rules: []policy.Rule{
		{ID: "tenant", Match: policy.Match{Method: "tenant.get"}, When: `claims.tenant == params.tenant`},
		{ID: "sub", Match: policy.Match{Method: "self.*"}, When: `principal.sub == "alice" && call.zone == "external" && "x" in principal.scopes`},
		{ID: "amount", Match: policy.Match{Method: "pay"}, When: `params.amount <= 100`},
		{ID: "cost", Match: policy.Match{Method: "cost"}, When: `params.items.all(a, params.items.all(b, params.items.all(c, a + b + c >= 0)))`},
	}})
	claims := map[string]any{"tenant": "acme", "n": json.Number("3")}
	tests := []struct {
		name   string
		method string
		sub    string
		params string
		want   policy.Denial
	}{
		{"tenant equal", "tenant.get", "alice", `{"tenant":"acme"}`, policy.NotDenied},
		{"tenant differs", "tenant.get", "alice", `{"tenant":"evil"}`, policy.DeniedCondition},
		{"tenant missing", "tenant.get", "alice", `{}`, policy.DeniedCondition},
		{"positional params have no names", "tenant.get", "alice", `["acme"]`, policy.DeniedCondition},
		{"duplicate key refused", "tenant.get", "alice", `{"tenant":"acme","tenant":"evil"}`, policy.DeniedParams},
		{"case-variant key refused", "tenant.get", "alice", `{"tenant":"acme","TENANT":"evil"}`, policy.DeniedParams},
		{"nested case variant refused", "tenant.get", "alice", `{"tenant":"acme","x":{"User":1,"user":2}}`, policy.DeniedParams},
		{"principal and call", "self.x", "alice", ``, policy.NotDenied},
		{"other subject", "self.x", "bob", ``, policy.DeniedCondition},
		{"number ok", "pay", "alice", `{"amount": 99.5}`, policy.NotDenied},
		{"number too big", "pay", "alice", `{"amount": 101}`, policy.DeniedCondition},
		{"cost limit", "cost", "alice", `{"items":[` + strings.Repeat("1,", 60) + `1]}`, policy.DeniedCondition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := e.Decide(policy.Input{
				Zone:      gateway.ZoneExternal,
				Principal: gateway.Principal{Subject: tt.sub, Scopes: []string{"x"}, Claims: claims},
				Subject:   policy.Subject{Method: tt.method, Kind: policy.KindBuiltin},
				Params:    []byte(tt.params),
			})
			if d.Denial != tt.want {
				t.Fatalf("denial = %d, want %d (%s)", d.Denial, tt.want, d.Reason)
			}
			if tt.name == "cost limit" && !strings.Contains(d.Reason, "cost") {
				t.Errorf("reason = %q, want the cost limit named", d.Reason)
			}
			if tt.want == policy.DeniedParams && d.Err().Code() != schemas.CodeInvalidParams {
				t.Errorf("err = %v, want INVALID_PARAMS", d.Err())
			}
		})
	}
}

func TestNewReportsEveryProblemWithItsPath(t *testing.T) {
	tests := []struct {
		name string
		cfg  policy.Config
		want []string
	}{
		{"syntax error", policy.Config{Rules: []policy.Rule{{Match: policy.Match{Method: "a"}}, {Match: policy.Match{Method: "b"}, When: "1 +"}}},
			[]string{"rules[1].when: ", "Syntax error"}},
		{"undeclared variable", policy.Config{Rules: []policy.Rule{{Match: policy.Match{Method: "a"}, When: `principal.name == "x"`}}},
			[]string{"rules[0].when: ", "undeclared reference"}},
		{"not a bool", policy.Config{Rules: []policy.Rule{{Match: policy.Match{Method: "a"}, When: `principal.sub`}}},
			[]string{"rules[0].when: ", "must be a bool"}},
		{"no match", policy.Config{Rules: []policy.Rule{{Scopes: []string{"a"}}}}, []string{"rules[0]: match must set exactly one"}},
		{"two matches", policy.Config{Rules: []policy.Rule{{Match: policy.Match{Method: "a", Capability: "b"}}}}, []string{"exactly one"}},
		{"tool without server", policy.Config{Rules: []policy.Rule{{Match: policy.Match{MCPTool: "x"}}}}, []string{"not <server>/<tool>"}},
		{"same match twice", policy.Config{Rules: []policy.Rule{{Match: policy.Match{GRPCMethod: "/a/B"}}, {Match: policy.Match{GRPCMethod: "a/B"}}}},
			[]string{"rules[1].match: rules[0] has the same match"}},
		{"duplicate id", policy.Config{Rules: []policy.Rule{{ID: "x", Match: policy.Match{Method: "a"}}, {ID: "x", Match: policy.Match{Method: "b"}}}},
			[]string{"rules[1].id: "}},
		{"bad mutation", policy.Config{Rules: []policy.Rule{{Match: policy.Match{Method: "a"}, Mutation: "WRITE"}}}, []string{"not a mutation class"}},
		{"bad scope", policy.Config{Rules: []policy.Rule{{Match: policy.Match{Method: "a"}, Scopes: []string{"a b"}}}}, []string{"white space"}},
		{"bad default", policy.Config{Default: "maybe"}, []string{"default: "}},
		{"bad approval_for", policy.Config{ApprovalFor: []policy.Mutation{"X"}}, []string{"approval_for[0]: "}},
		{"bad zone", policy.Config{Zones: map[string]policy.ZoneConfig{"dmz": {}}}, []string{"zones.dmz: "}},
		{"bad kind", policy.Config{Zones: map[string]policy.ZoneConfig{"external": {Reach: []policy.Kind{"web"}}}}, []string{"zones.external.reach[0]: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.New(tt.cfg)
			if err == nil {
				t.Fatal("New succeeded, want an error")
			}
			if _, ok := errors.AsType[*policy.ConfigError](err); !ok {
				t.Errorf("error %v holds no *ConfigError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestCompileSplitsProblems: Compile returns the engine of a valid section, and one
// ConfigError per problem of an invalid one, each at its path in the section.
func TestCompileSplitsProblems(t *testing.T) {
	if e, problems := policy.Compile(policy.Config{Rules: []policy.Rule{{Match: policy.Match{Method: "a"}}}}); e == nil || problems != nil {
		t.Fatalf("valid section: engine %v, problems %v", e, problems)
	}
	e, problems := policy.Compile(policy.Config{Default: "maybe", Rules: []policy.Rule{{Match: policy.Match{Method: "a"}, Mutation: "WRITE"}}})
	if e != nil {
		t.Fatal("invalid section compiled")
	}
	var paths []string
	for _, p := range problems {
		paths = append(paths, p.Path)
	}
	slices.Sort(paths)
	if want := []string{"default", "rules[0]"}; !slices.Equal(paths, want) {
		t.Errorf("paths %q, want %q (%v)", paths, want, problems)
	}
}

func TestFilter(t *testing.T) {
	e := engine(t, policy.Config{Rules: testRules})
	subjects := []policy.Subject{
		{Method: "demo.add", Kind: policy.KindBuiltin},
		{Method: "demo.echo", Kind: policy.KindBuiltin},
		{Method: "mcp.files__read", Kind: policy.KindMCP, MCPServer: "files", MCPTool: "read"},
		{Method: "unlisted", Kind: policy.KindBuiltin},
		{Method: "report", Capability: "report.weekly", Kind: policy.KindMCP},
	}
	p := gateway.Principal{Scopes: []string{"demo", "files:read", "reports"}}
	tests := []struct {
		name  string
		proto gateway.Protocol
		want  []bool
	}{
		{"http: mcp tools hidden from the external zone", gateway.ProtocolHTTP, []bool{true, false, false, false, true}},
		{"mcp face: tools shown by scope", gateway.ProtocolMCP, []bool{true, false, true, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := e.Filter(p, gateway.ZoneExternal, tt.proto, subjects); !slices.Equal(got, tt.want) {
				t.Errorf("Filter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecisionInContext(t *testing.T) {
	if _, ok := policy.DecisionFrom(context.Background()); ok {
		t.Fatal("a decision in an empty context")
	}
	ctx := policy.WithDecision(context.Background(), policy.Decision{Allowed: true, NeedsApproval: true, Rule: "r"})
	if d, ok := policy.DecisionFrom(ctx); !ok || !d.NeedsApproval || d.Rule != "r" {
		t.Errorf("DecisionFrom = %+v, %v", d, ok)
	}
}

func BenchmarkDecide(b *testing.B) {
	e, err := policy.New(policy.Config{Rules: append(slices.Clone(testRules),
		policy.Rule{Match: policy.Match{Method: "tenant.get"}, When: `claims.tenant == params.tenant`})})
	if err != nil {
		b.Fatal(err)
	}
	in := policy.Input{
		Principal: gateway.Principal{Scopes: []string{"demo"}, Claims: map[string]any{"tenant": "acme"}},
		Subject:   policy.Subject{Method: "tenant.get", Kind: policy.KindBuiltin},
		Params:    []byte(`{"tenant":"acme","n":1}`),
	}
	b.ReportAllocs()
	for b.Loop() {
		if d := e.Decide(in); !d.Allowed {
			b.Fatal(d.Reason)
		}
	}
}

// TestFilterKey: principals with the same FilterKey get the same answers from Filter for
// every subject, zone and protocol (the MCP face shares its narrowed lists between them);
// principals whose scopes differ as sets have different keys.
func TestFilterKey(t *testing.T) {
	e := engine(t, policy.Config{Rules: testRules})
	subjects := []policy.Subject{
		{Method: "demo.add", Kind: policy.KindBuiltin},
		{Method: "demo.echo", Kind: policy.KindBuiltin},
		{Method: "mcp.files__read", Kind: policy.KindMCP, MCPServer: "files", MCPTool: "read"},
		{Method: "report", Capability: "report.weekly", Kind: policy.KindMCP},
	}
	tests := []struct {
		name string
		a, b gateway.Principal
		same bool
	}{
		{"same scopes, other subjects", gateway.Principal{Subject: "alice", Scopes: []string{"demo"}},
			gateway.Principal{Subject: "bob", Scopes: []string{"demo"}}, true},
		{"scope order and repeats", gateway.Principal{Scopes: []string{"files:read", "demo", "demo"}},
			gateway.Principal{Scopes: []string{"demo", "files:read"}}, true},
		{"tier, claims and anonymity are not read", gateway.Principal{Tier: "gold", Claims: map[string]any{"x": 1}},
			gateway.Principal{Anonymous: true}, true},
		{"a scope more", gateway.Principal{Scopes: []string{"demo"}},
			gateway.Principal{Scopes: []string{"demo", "files:read"}}, false},
		{"other scopes", gateway.Principal{Scopes: []string{"demo"}}, gateway.Principal{Scopes: []string{"reports"}}, false},
		{"no scope and an empty one", gateway.Principal{}, gateway.Principal{Scopes: []string{""}}, false},
		{"concatenations do not collide", gateway.Principal{Scopes: []string{"ab", "c"}},
			gateway.Principal{Scopes: []string{"a", "bc"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if same := e.FilterKey(tt.a) == e.FilterKey(tt.b); same != tt.same {
				t.Fatalf("keys %q and %q: same %v, want %v", e.FilterKey(tt.a), e.FilterKey(tt.b), same, tt.same)
			}
			if !tt.same {
				return
			}
			for _, zone := range []gateway.TrustZone{gateway.ZoneExternal, gateway.ZoneInternal} {
				for _, proto := range []gateway.Protocol{gateway.ProtocolHTTP, gateway.ProtocolMCP} {
					if a, b := e.Filter(tt.a, zone, proto, subjects), e.Filter(tt.b, zone, proto, subjects); !slices.Equal(a, b) {
						t.Errorf("%v %v: Filter %v and %v for principals of one key", zone, proto, a, b)
					}
				}
			}
		})
	}
}
