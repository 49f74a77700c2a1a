package policy

import (
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// Names of the variables built only when a condition reads them.
const (
	varClaims = "claims"
	varParams = "params"
)

// Environment lists the variables a condition (rules[].when) may use, with their CEL types.
// Names are checked when the configuration loads: a condition naming anything else is
// refused.
var Environment = []struct {
	Name string
	Type *cel.Type
	Doc  string
}{
	{varClaims, cel.MapType(cel.StringType, cel.DynType), "the verified claims of the caller's token ({} without one)"},
	{"principal.sub", cel.StringType, "the caller's subject"},
	{"principal.scopes", cel.ListType(cel.StringType), "the caller's scopes"},
	{"principal.anonymous", cel.BoolType, "whether the caller presented no credential"},
	{"call.method", cel.StringType, "the JSON-RPC method"},
	{"call.capability", cel.StringType, "the NEKTE capability id, \"\" for a direct call"},
	{"call.zone", cel.StringType, "the trust zone: external, internal, operator, local"},
	{"call.protocol", cel.StringType, "the ingress protocol: http, websocket, grpc, mcp, stdio"},
	{"call.target", cel.StringType, "the target kind: builtin, grpc, mcp, nekte"},
	{"call.mcp_tool", cel.StringType, "\"<server>/<tool>\" for an MCP tool, else \"\""},
	{"call.grpc_method", cel.StringType, "\"<pkg.Service>/<Method>\" for a gRPC method, else \"\""},
	{"call.mcp_resource", cel.StringType, "\"<server>/<uri>\" for an MCP resource (read or completed), else \"\""},
	{"call.mcp_prompt", cel.StringType, "\"<server>/<prompt>\" for an MCP prompt (got or completed), else \"\""},
	{varParams, cel.MapType(cel.StringType, cel.DynType), "the call's params, decoded strictly (DecodeParams)"},
}

// newEnv returns the CEL environment of conditions.
func newEnv() (*cel.Env, error) {
	opts := make([]cel.EnvOption, 0, len(Environment)+1)
	for _, v := range Environment {
		opts = append(opts, cel.Variable(v.Name, v.Type))
	}
	opts = append(opts, cel.ParserExpressionSizeLimit(MaxWhenBytes), cel.ParserRecursionLimit(MaxParamsDepth))
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("policy CEL environment: %w", err)
	}
	return env, nil
}

// condition is a compiled rules[].when.
type condition struct {
	prg cel.Program
	// usesClaims and usesParams say whether building those variables is worth it.
	usesClaims, usesParams bool
}

// compile type-checks src in env and builds its program, bounded by costLimit.
func compile(env *cel.Env, src string, costLimit uint64) (*condition, error) {
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, fmt.Errorf("the condition is of type %s; it must be a bool", t)
	}
	prg, err := env.Program(ast, cel.CostLimit(costLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, err
	}
	c := &condition{prg: prg}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		switch ref.Name {
		case varClaims:
			c.usesClaims = true
		case varParams:
			c.usesParams = true
		}
	}
	return c, nil
}

// eval runs the condition on vars; anything but true — false, an error such as a missing
// key, a cost past the limit — denies.
func (c *condition) eval(vars map[string]any) (bool, error) {
	out, _, err := c.prg.Eval(vars)
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the condition gave %s, not a bool", out.Type().TypeName())
	}
	return b, nil
}
