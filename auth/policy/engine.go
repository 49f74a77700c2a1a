package policy

import (
	"errors"
	"fmt"
	"slices"

	"github.com/google/cel-go/cel"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Subject is what a call reaches, as the server can tell from the call and its routed
// target. Fields it cannot tell are empty, and rules matching on them do not apply.
type Subject struct {
	// Method is the JSON-RPC method.
	Method string
	// Capability is the NEKTE capability id the call runs as; empty for a direct call.
	Capability string
	// Kind is the kind of target the method is routed to.
	Kind Kind
	// MCPServer and MCPTool name an MCP tool on its upstream server (the name the server
	// gives it, before any prefix the gateway adds); empty unless Kind is KindMCP.
	MCPServer, MCPTool string
	// GRPCMethod is the full gRPC method "<pkg.Service>/<Method>"; empty unless Kind is
	// KindGRPC.
	GRPCMethod string
	// MCPResource is the URI (or, completing a template's argument, the URI template) of a
	// resource on MCPServer; MCPPrompt the name MCPServer gives a prompt. At most one of
	// MCPTool, MCPResource and MCPPrompt is set. A subject with either reads: the rule of
	// calls no rule matches, under default allow, classes it READ_ONLY.
	MCPResource, MCPPrompt string
}

// mcpTool returns "<server>/<tool>", or "" when the subject is no MCP tool.
func (s Subject) mcpTool() string { return onServer(s.MCPServer, s.MCPTool) }

// mcpResource returns "<server>/<uri>", or "" when the subject is no MCP resource.
func (s Subject) mcpResource() string { return onServer(s.MCPServer, s.MCPResource) }

// mcpPrompt returns "<server>/<prompt>", or "" when the subject is no MCP prompt.
func (s Subject) mcpPrompt() string { return onServer(s.MCPServer, s.MCPPrompt) }

// reads reports whether the subject is an MCP resource or prompt.
func (s Subject) reads() bool { return s.mcpResource() != "" || s.mcpPrompt() != "" }

func onServer(server, name string) string {
	if server == "" || name == "" {
		return ""
	}
	return server + "/" + name
}

// Input is everything Decide looks at.
type Input struct {
	Principal gateway.Principal
	Zone      gateway.TrustZone
	Protocol  gateway.Protocol
	Subject   Subject
	// Params is the call's raw params; decoded only when the matching rule's condition
	// reads them.
	Params []byte
}

// Denial says why a call was refused.
type Denial uint8

// Denials.
const (
	NotDenied       Denial = iota
	DeniedZone             // the zone may not reach the target's kind
	DeniedNoRule           // no rule matches and policy.default is deny
	DeniedScope            // the caller lacks scopes the rule requires
	DeniedParams           // the params could not be decoded strictly for the condition
	DeniedCondition        // the rule's condition did not hold (false or an error)
)

// Decision is the answer for one call.
type Decision struct {
	// Allowed is true when the call may proceed (possibly after approval).
	Allowed bool
	// Denial says why the call was refused; NotDenied when Allowed.
	Denial Denial
	// Missing lists the required scopes the caller lacks (DeniedScope), in rule order.
	Missing []string
	// Mutation is the rule's mutation class.
	Mutation Mutation
	// NeedsApproval is true when the call must be approved by a human before it runs.
	NeedsApproval bool
	// Rule is the id of the rule that decided, "" when none matched.
	Rule string
	// Scopes are the scopes the rule requires, in rule order; a downstream token minted
	// for the call carries no scope outside them. Shared with the rule: do not modify.
	Scopes []string
	// Reason explains the decision for logs; it may name params and claims and is never
	// sent to the caller.
	Reason string

	zone gateway.TrustZone // for the error of DeniedZone
	kind Kind
}

// Engine is a compiled policy. It is immutable and safe for concurrent use.
type Engine struct {
	rules        []*rule
	exact        map[matchKind]map[string]*rule
	globs        []*rule
	defaultDeny  bool
	reach        [gateway.ZoneLocal + 1][]Kind
	implicit     rule // the rule of calls no rule matches, under default allow
	implicitRead rule // the same for MCP resources and prompts: READ_ONLY
	uses         map[matchKind]bool
}

// rule is a compiled Rule.
type rule struct {
	id            string
	index         int
	kind          matchKind
	glob          gateway.Glob
	scopes        []string
	mutation      Mutation
	needsApproval bool
	when          *condition
}

// New compiles cfg. Every problem is reported, each as a *ConfigError naming the rule
// ("rules[3].when: …"), a condition's error with its line and column.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	env, err := newEnv()
	if err != nil {
		return nil, err
	}
	limit := cfg.CostLimit
	if limit == 0 {
		limit = DefaultCostLimit
	}
	approvalFor := cfg.ApprovalFor
	if approvalFor == nil {
		approvalFor = []Mutation{Destructive}
	}
	e := &Engine{
		exact:        make(map[matchKind]map[string]*rule),
		defaultDeny:  cfg.Default != DefaultAllow,
		uses:         make(map[matchKind]bool),
		implicit:     rule{mutation: NonIdempotentWrite, needsApproval: slices.Contains(approvalFor, NonIdempotentWrite)},
		implicitRead: rule{mutation: ReadOnly, needsApproval: slices.Contains(approvalFor, ReadOnly)},
	}
	for z := range e.reach {
		e.reach[z] = DefaultReach(gateway.TrustZone(z))
	}
	for name, zc := range cfg.Zones {
		z, _ := parseZone(name)
		e.reach[z] = slices.Clone(zc.Reach)
	}
	var errs []error
	for i, rc := range cfg.Rules {
		r, err := compileRule(env, i, rc, approvalFor, limit)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		e.add(r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return e, nil
}

// Compile is New for a configuration file: it returns the engine, or nil and one
// ConfigError per problem, each at its path relative to the section ("" for a problem of
// the section as a whole).
func Compile(cfg Config) (*Engine, []ConfigError) {
	e, err := New(cfg)
	if err == nil {
		return e, nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]ConfigError, 0, len(errs))
	for _, e := range errs {
		if ce, ok := errors.AsType[*ConfigError](e); ok {
			out = append(out, *ce)
		} else {
			out = append(out, ConfigError{Msg: e.Error()})
		}
	}
	return nil, out
}

// compileRule compiles rc, the rule at index i.
func compileRule(env *cel.Env, i int, rc Rule, approvalFor []Mutation, limit uint64) (*rule, error) {
	kind, pattern, _ := rc.Match.only()
	r := &rule{
		id:       rc.ID,
		index:    i,
		kind:     kind,
		glob:     gateway.NewGlob(normalize(kind, pattern)),
		scopes:   slices.Clone(rc.Scopes),
		mutation: rc.Mutation,
	}
	if r.id == "" {
		r.id = fmt.Sprintf("rules[%d]", i)
	}
	switch {
	case r.mutation != "":
	case kind == byResource || kind == byPrompt:
		r.mutation = ReadOnly
	default:
		r.mutation = NonIdempotentWrite
	}
	r.needsApproval = slices.Contains(approvalFor, r.mutation)
	if rc.Approval != nil {
		r.needsApproval = *rc.Approval
	}
	if rc.When != "" {
		c, err := compile(env, rc.When, limit)
		if err != nil {
			return nil, &ConfigError{Path: fmt.Sprintf("rules[%d].when", i), Msg: err.Error()}
		}
		r.when = c
	}
	return r, nil
}

// add indexes r: exact patterns by kind and name, globs in a list.
func (e *Engine) add(r *rule) {
	e.rules = append(e.rules, r)
	e.uses[r.kind] = true
	if !r.glob.Exact() {
		e.globs = append(e.globs, r)
		return
	}
	m := e.exact[r.kind]
	if m == nil {
		m = make(map[string]*rule)
		e.exact[r.kind] = m
	}
	m[r.glob.Pattern()] = r
}

// MatchesMCPTools reports whether any rule matches on mcp_tool, so the server knows
// whether resolving a call's MCP tool is worth it.
func (e *Engine) MatchesMCPTools() bool { return e.uses[byMCPTool] }

// MatchesMCPReads reports whether any rule matches on mcp_resource or mcp_prompt.
func (e *Engine) MatchesMCPReads() bool { return e.uses[byResource] || e.uses[byPrompt] }

// MatchesGRPCMethods reports whether any rule matches on grpc_method.
func (e *Engine) MatchesGRPCMethods() bool { return e.uses[byGRPCMethod] }
