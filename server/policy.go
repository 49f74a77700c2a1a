package server

import (
	"context"
	"errors"
	"sync"

	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// policyStage is the policy stage of one configuration: it describes each routed call as a
// policy.Subject, asks the engine, and refuses the call with the decision's error, or
// passes it on with the decision in its context (policy.DecisionFrom) for the approval
// stage. Calls whose decision needs approval are not held yet: the decision is recorded,
// and holding them is the approval stage's job.
type policyStage struct {
	engine *policy.Engine
	// grpc caches, per gRPC backend whose descriptors have loaded, JSON-RPC method →
	// full gRPC method. A backend loads its descriptors once, so the cache never goes stale;
	// it lives and dies with the configuration.
	grpc sync.Map // *grpcbackend.Backend → map[string]string
}

// policyMiddleware returns the policy stage for engine; nil (no policy section) leaves the
// stage out of the chain.
func policyMiddleware(engine *policy.Engine) gateway.Middleware {
	if engine == nil {
		return nil
	}
	s := &policyStage{engine: engine}
	return s.wrap
}

func (s *policyStage) wrap(next gateway.Handler) gateway.Handler {
	return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
		d := s.engine.Decide(policy.Input{
			Principal: call.Principal,
			Zone:      call.Zone,
			Protocol:  call.Protocol,
			Subject:   s.subject(call),
			Params:    call.Params,
		})
		if err := d.Err(); err != nil {
			return nil, err
		}
		return next(policy.WithDecision(ctx, d), call)
	}
}

// subject describes call and its routed target. What a target cannot tell stays empty:
// an MCP tool's, resource's or prompt's upstream is looked up in the bridge's current
// catalog (mcpbackend.Target.CatalogItem), a gRPC method's full name in the backend's loaded
// descriptors (empty before they load — the backend refuses the call then anyway). The
// lookups run only when some rule matches on them, or, for the bridge's read methods,
// always: the implicit rule of an unmatched resource or prompt is READ_ONLY.
func (s *policyStage) subject(call *gateway.Call) policy.Subject {
	sub := policy.Subject{Method: call.Method, Capability: call.Capability, Kind: policy.KindBuiltin}
	switch t := call.Target.(type) {
	case *mcpbackend.Target:
		sub.Kind = policy.KindMCP
		if s.engine.MatchesMCPTools() || s.engine.MatchesMCPReads() || t.ReadMethod(call.Method) {
			mcpSubject(&sub, t.CatalogItem(call))
		}
	case *grpcbackend.Backend:
		sub.Kind = policy.KindGRPC
		if s.engine.MatchesGRPCMethods() {
			sub.GRPCMethod = s.grpcMethod(t, call.Method)
		}
	case *nekteRoute:
		sub.Kind = policy.KindNekte
	}
	return sub
}

// mcpSubject names in sub the tool, resource or prompt a call of the bridge reaches.
func mcpSubject(sub *policy.Subject, r mcpbackend.Reached) {
	switch r.Kind {
	case mcpbackend.ReachTool:
		sub.MCPServer, sub.MCPTool = r.Upstream, r.Name
	case mcpbackend.ReachResource:
		sub.MCPServer, sub.MCPResource = r.Upstream, r.Name
	case mcpbackend.ReachPrompt:
		sub.MCPServer, sub.MCPPrompt = r.Upstream, r.Name
	case mcpbackend.ReachNone:
	}
}

// mcpTool returns the upstream server and its own name of the catalog item — tool,
// resource (its URI) or prompt — call reaches, empty when the catalog does not list it.
// The metrics stage counts a call under its method when it reaches one (catalogTool):
// the catalog and the three fixed read methods bound those names.
func mcpTool(t *mcpbackend.Target, call *gateway.Call) (server, name string) {
	r := t.CatalogItem(call)
	return r.Upstream, r.Name
}

// grpcMethod returns the full gRPC method ("pkg.Service/Method") method is mapped to on b.
func (s *policyStage) grpcMethod(b *grpcbackend.Backend, method string) string {
	if m, ok := s.grpc.Load(b); ok {
		return m.(map[string]string)[method] //nolint:forcetypeassert // only maps are stored
	}
	select {
	case <-b.Loaded():
	default:
		return ""
	}
	ms := b.Methods()
	full := make(map[string]string, len(ms))
	for _, m := range ms {
		full[m.Name] = string(m.Descriptor.Parent().FullName()) + "/" + string(m.Descriptor.Name())
	}
	s.grpc.Store(b, full)
	return full[method]
}

// policyChainStage returns the policy stage of cfg: nil without a policy section; with
// the engine Parse compiled, or, for a configuration built in code, one compiled now. A
// policy that does not compile refuses every call rather than serve without it.
func (c *Config) policyChainStage() gateway.Middleware {
	if c.Policy == nil {
		return nil
	}
	if c.policy != nil {
		return policyMiddleware(c.policy)
	}
	e, err := policy.New(*c.Policy)
	if err != nil {
		refuse := gateway.NewError(schemas.CodeInternal).With("reason", "the policy section does not compile").Wrap(err)
		return func(gateway.Handler) gateway.Handler {
			return func(context.Context, *gateway.Call) (*gateway.Result, error) { return nil, refuse }
		}
	}
	return policyMiddleware(e)
}

// compilePolicy compiles the policy section into c.policy and returns its problems, with
// paths from the root of the file.
func (c *Config) compilePolicy() []policy.ConfigError {
	if c.Policy == nil {
		return nil
	}
	e, err := policy.New(*c.Policy)
	if err == nil {
		c.policy = e
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]policy.ConfigError, 0, len(errs))
	for _, e := range errs {
		if ce, ok := errors.AsType[*policy.ConfigError](e); ok {
			out = append(out, policy.ConfigError{Path: "policy." + ce.Path, Msg: ce.Msg})
		} else {
			out = append(out, policy.ConfigError{Path: "policy", Msg: e.Error()})
		}
	}
	return out
}
