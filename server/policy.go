package server

import (
	"errors"

	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/gateway"
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

// compilePolicy compiles the policy section and returns the engine (nil without a section
// or when it does not compile) and its problems, with paths from the root of the file.
func (c *Config) compilePolicy() (*policy.Engine, []policy.ConfigError) {
	if c.Policy == nil {
		return nil, nil
	}
	e, err := policy.New(*c.Policy)
	if err == nil {
		return e, nil
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
	return nil, out
}
