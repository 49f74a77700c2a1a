package policy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// reachTarget is a target that says what its calls reach, and counts the lookups asked of it.
type reachTarget struct {
	brief, full gateway.Reach
	lookups     int
}

func (*reachTarget) Name() string { return "reach" }

func (*reachTarget) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	return gateway.NewResult([]byte("null")), nil
}

func (r *reachTarget) Reaches(_ *gateway.Call, detail bool) gateway.Reach {
	if !detail {
		return r.brief
	}
	r.lookups++
	return r.full
}

// plainTarget describes nothing: its calls reach a built-in method.
type plainTarget struct{}

func (plainTarget) Name() string { return "plain" }

func (plainTarget) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) { return nil, nil }

// TestSubject: the subject of a call is what its target says it reaches, looked up in
// detail only when a rule matches on the item.
func TestSubject(t *testing.T) {
	tool := gateway.Reach{Kind: gateway.ReachMCPTool, Server: "fs", Name: "read"}
	res := gateway.Reach{Kind: gateway.ReachMCPResource, Server: "fs", Name: "file:///a"}
	grpcFull := gateway.Reach{Kind: gateway.ReachGRPC, Server: "calc", Name: "calc.v1.Calc/Sum"}
	byMethod := []policy.Rule{{ID: "any", Match: policy.Match{Method: "*"}}}
	byTool := []policy.Rule{{ID: "t", Match: policy.Match{MCPTool: "fs/*"}}}
	byGRPC := []policy.Rule{{ID: "g", Match: policy.Match{GRPCMethod: "calc.v1.Calc/*"}}}
	tests := []struct {
		name        string
		rules       []policy.Rule
		target      gateway.Target
		want        policy.Subject
		wantLookups int
	}{
		{"no target is built-in", byMethod, nil, policy.Subject{Method: "m", Kind: policy.KindBuiltin}, 0},
		{"a target that describes nothing is built-in", byMethod, plainTarget{}, policy.Subject{Method: "m", Kind: policy.KindBuiltin}, 0},
		{"MCP tool, no rule on tools", byMethod, &reachTarget{brief: gateway.Reach{Kind: gateway.ReachMCP}, full: tool},
			policy.Subject{Method: "m", Kind: policy.KindMCP}, 0},
		{"MCP tool, a rule on tools", byTool, &reachTarget{brief: gateway.Reach{Kind: gateway.ReachMCP}, full: tool},
			policy.Subject{Method: "m", Kind: policy.KindMCP, MCPServer: "fs", MCPTool: "read"}, 1},
		{"MCP read described without detail", byMethod, &reachTarget{brief: res, full: res},
			policy.Subject{Method: "m", Kind: policy.KindMCP, MCPServer: "fs", MCPResource: "file:///a"}, 0},
		{"MCP tool, a rule on gRPC methods only", byGRPC, &reachTarget{brief: gateway.Reach{Kind: gateway.ReachMCP}, full: tool},
			policy.Subject{Method: "m", Kind: policy.KindMCP}, 0},
		{"gRPC, no rule on gRPC methods", byTool, &reachTarget{brief: gateway.Reach{Kind: gateway.ReachGRPC, Server: "calc"}, full: grpcFull},
			policy.Subject{Method: "m", Kind: policy.KindGRPC}, 0},
		{"gRPC, a rule on gRPC methods", byGRPC, &reachTarget{brief: gateway.Reach{Kind: gateway.ReachGRPC, Server: "calc"}, full: grpcFull},
			policy.Subject{Method: "m", Kind: policy.KindGRPC, GRPCMethod: "calc.v1.Calc/Sum"}, 1},
		{"NEKTE", byTool, &reachTarget{brief: gateway.Reach{Kind: gateway.ReachNekte}}, policy.Subject{Method: "m", Kind: policy.KindNekte}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engine(t, policy.Config{Rules: tt.rules})
			call := &gateway.Call{Method: "m", Target: tt.target}
			if got := e.Subject(call); got != tt.want {
				t.Errorf("Subject = %+v, want %+v", got, tt.want)
			}
			if r, ok := tt.target.(*reachTarget); ok && r.lookups != tt.wantLookups {
				t.Errorf("%d lookups, want %d", r.lookups, tt.wantLookups)
			}
		})
	}
}

// TestStage: the stage refuses with the decision's error or passes the decision on; a nil
// engine is no stage; a refusing stage refuses everything.
func TestStage(t *testing.T) {
	if policy.NewStage(nil) != nil {
		t.Fatal("NewStage(nil) is a stage")
	}
	e := engine(t, policy.Config{Rules: []policy.Rule{{ID: "r", Match: policy.Match{Method: "m"}, Scopes: []string{"read"}}}})
	var seen policy.Decision
	next := func(ctx context.Context, _ *gateway.Call) (*gateway.Result, error) {
		seen, _ = policy.DecisionFrom(ctx)
		return gateway.NewResult([]byte("1")), nil
	}
	h := policy.NewStage(e)(next)
	call := func(scopes ...string) error {
		_, err := h(context.Background(), &gateway.Call{Method: "m", Zone: gateway.ZoneExternal, Principal: gateway.Principal{Scopes: scopes}})
		return err
	}
	if err := call("read"); err != nil || seen.Rule != "r" {
		t.Fatalf("allowed call: %v, decision %+v", err, seen)
	}
	if err := call(); gateway.AsError(err).Code() != schemas.CodeInsufficientScope {
		t.Fatalf("call without the scope: %v", err)
	}
	refuse := policy.NewRefusingStage(errors.New("bad rule"))(next)
	if _, err := refuse(context.Background(), &gateway.Call{Method: "m"}); gateway.AsError(err).Code() != schemas.CodeInternal {
		t.Fatalf("refusing stage: %v", err)
	}
}

func BenchmarkStage(b *testing.B) {
	e, err := policy.New(policy.Config{Rules: []policy.Rule{{ID: "r", Match: policy.Match{Method: "m"}, Scopes: []string{"read"}}}})
	if err != nil {
		b.Fatal(err)
	}
	h := policy.NewStage(e)(func(context.Context, *gateway.Call) (*gateway.Result, error) { return nil, nil })
	call := &gateway.Call{Method: "m", Zone: gateway.ZoneExternal, Principal: gateway.Principal{Scopes: []string{"read"}}}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = h(context.Background(), call)
	}
}

// TestMutationClassifiers: without a decision every call changes state and none is
// repeatable; with one, the rule's mutation class decides.
func TestMutationClassifiers(t *testing.T) {
	tests := []struct {
		name                     string
		ctx                      context.Context
		changesState, repeatable bool
	}{
		{"no policy", context.Background(), true, false},
		{"read only", policy.WithDecision(context.Background(), policy.Decision{Mutation: policy.ReadOnly}), false, true},
		{"idempotent write", policy.WithDecision(context.Background(), policy.Decision{Mutation: policy.IdempotentWrite}), true, true},
		{"non-idempotent write", policy.WithDecision(context.Background(), policy.Decision{Mutation: policy.NonIdempotentWrite}), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := policy.ChangesState(tt.ctx, nil); got != tt.changesState {
				t.Errorf("ChangesState = %v, want %v", got, tt.changesState)
			}
			if got := policy.Repeatable(tt.ctx, nil); got != tt.repeatable {
				t.Errorf("Repeatable = %v, want %v", got, tt.repeatable)
			}
		})
	}
}
