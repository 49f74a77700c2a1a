package policy

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// NewStage returns the policy stage of e: it describes each routed call as a Subject
// (Engine.Subject), asks e, and refuses the call with the decision's error, or passes it
// on with the decision in its context (DecisionFrom) for the stages below. Calls whose
// decision needs approval are not held here: the decision is recorded, and holding them
// is the approval stage's job. A nil e (no policy section) returns nil, which leaves the
// stage out of the chain.
func NewStage(e *Engine) gateway.Middleware {
	if e == nil {
		return nil
	}
	return func(next gateway.Handler) gateway.Handler {
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			d := e.Decide(Input{
				Principal: call.Principal,
				Zone:      call.Zone,
				Protocol:  call.Protocol,
				Subject:   e.Subject(call),
				Params:    call.Params,
			})
			if err := d.Err(); err != nil {
				return nil, err
			}
			return next(WithDecision(ctx, d), call)
		}
	}
}

// NewRefusingStage returns the stage of a policy section that does not compile (err is
// why): it refuses every call with INTERNAL rather than serve without the policy.
func NewRefusingStage(err error) gateway.Middleware {
	refuse := gateway.NewError(schemas.CodeInternal).With("reason", "the policy section does not compile").Wrap(err)
	return func(gateway.Handler) gateway.Handler {
		return func(context.Context, *gateway.Call) (*gateway.Result, error) { return nil, refuse }
	}
}

// Subject describes call and its routed target (gateway.ReachOf): the kind of target and,
// where e has a rule that matches on them, the MCP tool, resource or prompt with its
// upstream server, and the full gRPC method. What a target cannot tell stays empty: an
// item the bridge's catalog does not list, a gRPC method before the backend's descriptors
// load (the backend refuses the call then anyway). The MCP bridge's read methods are
// always described in full: the implicit rule of an unmatched resource or prompt is
// READ_ONLY.
func (e *Engine) Subject(call *gateway.Call) Subject {
	r := gateway.ReachOf(call, false)
	if r.Name == "" && e.wantsDetail(r.Kind) {
		r = gateway.ReachOf(call, true)
	}
	sub := Subject{Method: call.Method, Capability: call.Capability, Kind: KindBuiltin}
	switch r.Kind {
	case gateway.ReachGRPC:
		sub.Kind, sub.GRPCMethod = KindGRPC, r.Name
	case gateway.ReachMCPTool:
		sub.Kind, sub.MCPServer, sub.MCPTool = KindMCP, r.Server, r.Name
	case gateway.ReachMCPResource:
		sub.Kind, sub.MCPServer, sub.MCPResource = KindMCP, r.Server, r.Name
	case gateway.ReachMCPPrompt:
		sub.Kind, sub.MCPServer, sub.MCPPrompt = KindMCP, r.Server, r.Name
	case gateway.ReachMCP:
		sub.Kind = KindMCP
	case gateway.ReachNekte:
		sub.Kind = KindNekte
	case gateway.ReachBuiltin:
	}
	return sub
}

// wantsDetail reports whether a rule of e matches on the item a call of kind reaches, so
// the target must look it up (a catalog, loaded descriptors).
func (e *Engine) wantsDetail(kind gateway.ReachKind) bool {
	switch kind {
	case gateway.ReachGRPC:
		return e.MatchesGRPCMethods()
	case gateway.ReachMCP:
		return e.MatchesMCPTools() || e.MatchesMCPReads()
	default:
		return false
	}
}
