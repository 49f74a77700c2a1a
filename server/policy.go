package server

import (
	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

// compiled is what validating a configuration built beyond checking it. Parse hands it to
// the runtime built from that configuration (reloadFile), so a reload compiles the policy
// once, beside the old one; a configuration that comes without it (built in code, or given
// to New or Reload) is compiled when its runtime is built.
type compiled struct {
	// policy is the policy section compiled; nil without one.
	policy *policy.Engine
}

// runtimePolicy is the policy of one runtime: the engine, or why the section does not
// compile; zero without a policy section.
type runtimePolicy struct {
	engine *policy.Engine
	err    error
}

// policyOf returns the policy of cfg: the engine pre holds when validate compiled it
// (pre may be nil), else one compiled now.
func policyOf(cfg *Config, pre *compiled) runtimePolicy {
	switch {
	case cfg.Policy == nil:
		return runtimePolicy{}
	case pre != nil && pre.policy != nil:
		return runtimePolicy{engine: pre.policy}
	}
	e, err := policy.New(*cfg.Policy)
	if err != nil {
		return runtimePolicy{err: err}
	}
	return runtimePolicy{engine: e}
}

// stage returns the policy stage (auth/policy): nil without a policy section; a policy
// that does not compile refuses every call rather than serve without it.
func (p runtimePolicy) stage() gateway.Middleware {
	if p.err != nil {
		return policy.NewRefusingStage(p.err)
	}
	return policy.NewStage(p.engine)
}

// newVisibility returns what callers see of the catalogs of a runtime whose policy is pol
// and whose methods table routes (capability.Visibility): an entry is shown when the
// policy's Filter would let the caller reach it — its zone reaches the target's kind and it
// holds the scopes of the rule that matches — each entry described as the policy stage
// describes the call that runs it (policy.Engine.Subject), so a listing and the decision
// on a call agree. Rule conditions are not evaluated, so an entry shown can still be
// refused when called. A policy that does not compile hides everything.
func newVisibility(pol runtimePolicy, table *routing.Table) *capability.Visibility {
	p := capability.VisibilityParams{Routes: table, HideAll: pol.err != nil}
	if e := pol.engine; e != nil {
		p.Decide = func(pr gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol, call *gateway.Call) bool {
			return e.Filter(pr, zone, proto, []policy.Subject{e.Subject(call)})[0]
		}
		p.DecideKey = e.FilterKey // what Filter reads of the principal: the MCP face's list cache keys on it
	}
	return capability.NewVisibility(p)
}
