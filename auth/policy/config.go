package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Config is the policy section of the configuration file.
type Config struct {
	// Rules give methods, capabilities, MCP tools and gRPC methods their required scopes,
	// mutation class, approval and condition. For each call the most specific matching rule
	// applies (see Engine).
	Rules []Rule `yaml:"rules" json:"rules,omitempty"`
	// Default decides calls no rule matches: "deny" (the default) or "allow".
	Default string `yaml:"default" json:"default,omitempty"`
	// ApprovalFor lists the mutation classes whose rules need approval unless the rule says
	// otherwise (default [DESTRUCTIVE]).
	ApprovalFor []Mutation `yaml:"approval_for" json:"approval_for,omitempty"`
	// Zones say, per trust zone, which target kinds its callers may reach; a zone left out
	// keeps its default (DefaultReach).
	Zones map[string]ZoneConfig `yaml:"zones" json:"zones,omitempty"`
	// CostLimit bounds the CEL cost of evaluating one condition (default DefaultCostLimit);
	// a condition that exceeds it denies the call.
	CostLimit uint64 `yaml:"cost_limit" json:"cost_limit,omitempty"`
}

// Rule is one entry of policy.rules.
type Rule struct {
	// ID names the rule in logs and decisions (default "rules[<index>]").
	ID string `yaml:"id" json:"id,omitempty"`
	// Match selects the calls the rule applies to; exactly one of its fields is set.
	Match Match `yaml:"match" json:"match"`
	// Scopes are required, all of them.
	Scopes []string `yaml:"scopes" json:"scopes,omitempty"`
	// Mutation classifies what the call does (default NON_IDEMPOTENT_WRITE; READ_ONLY for
	// mcp_resource and mcp_prompt rules).
	Mutation Mutation `yaml:"mutation" json:"mutation,omitempty"`
	// When is a CEL condition that must hold for the call to be allowed; empty: none.
	When string `yaml:"when" json:"when,omitempty"`
	// Approval says whether the call needs a human's approval; absent, it does when the
	// rule's mutation class is in approval_for.
	Approval *bool `yaml:"approval" json:"approval,omitempty"`
}

// Match selects calls by one identity of the call; exactly one field is set. Each is a
// glob: "*" matches any run of characters (separators included), "?" one character, every
// other character itself.
type Match struct {
	// Method matches the JSON-RPC method name.
	Method string `yaml:"method" json:"method,omitempty"`
	// Capability matches the NEKTE capability id a call runs as (nekte.invoke, delegate).
	Capability string `yaml:"capability" json:"capability,omitempty"`
	// MCPTool matches "<upstream server>/<tool name on that server>".
	MCPTool string `yaml:"mcp_tool" json:"mcp_tool,omitempty"`
	// GRPCMethod matches the full gRPC method "<pkg.Service>/<Method>" (a leading "/" is
	// ignored).
	GRPCMethod string `yaml:"grpc_method" json:"grpc_method,omitempty"`
	// MCPResource matches "<upstream server>/<resource URI>" of an MCP resources/read (and
	// "<server>/<URI template>" of a completion/complete for a resource template).
	MCPResource string `yaml:"mcp_resource" json:"mcp_resource,omitempty"`
	// MCPPrompt matches "<upstream server>/<prompt name on that server>" of an MCP
	// prompts/get, and of a completion/complete for that prompt's arguments.
	MCPPrompt string `yaml:"mcp_prompt" json:"mcp_prompt,omitempty"`
}

// ZoneConfig is one entry of policy.zones.
type ZoneConfig struct {
	// Reach lists the target kinds the zone's callers may reach.
	Reach []Kind `yaml:"reach" json:"reach"`
}

// Mutation is the class of change a call makes.
type Mutation string

// Mutation classes, from harmless to irreversible.
const (
	ReadOnly           Mutation = "READ_ONLY"
	IdempotentWrite    Mutation = "IDEMPOTENT_WRITE"
	NonIdempotentWrite Mutation = "NON_IDEMPOTENT_WRITE"
	Destructive        Mutation = "DESTRUCTIVE"
)

var mutations = []Mutation{ReadOnly, IdempotentWrite, NonIdempotentWrite, Destructive}

// Kind is the kind of target a call reaches.
type Kind string

// Target kinds.
const (
	KindBuiltin Kind = "builtin" // methods the gateway serves itself (demo, rpc.*, extras)
	KindGRPC    Kind = "grpc"    // a gRPC backend
	KindMCP     Kind = "mcp"     // an MCP tool called directly as a method, or a bridged resource or prompt
	KindNekte   Kind = "nekte"   // the NEKTE service: discovery, capabilities, tasks
)

var kinds = []Kind{KindBuiltin, KindGRPC, KindMCP, KindNekte}

// Defaults.
const (
	DefaultCostLimit = 10_000
	// MaxWhenBytes bounds the text of one condition.
	MaxWhenBytes = 4096
	// DefaultAllow and DefaultDeny are the values of policy.default.
	DefaultAllow = "allow"
	DefaultDeny  = "deny"
)

// DefaultReach returns the target kinds callers of zone may reach when policy.zones does
// not name it: the external zone reaches built-in methods, gRPC backends and NEKTE (MCP
// tools only as capabilities, through nekte.invoke — the default of
// routing.mcp.direct_zones); every other zone reaches every kind.
func DefaultReach(zone gateway.TrustZone) []Kind {
	if zone == gateway.ZoneExternal {
		return []Kind{KindBuiltin, KindGRPC, KindNekte}
	}
	return slices.Clone(kinds)
}

// ConfigError is one problem of a policy section; Path is relative to the section
// ("rules[2].when").
type ConfigError struct {
	Path string
	Msg  string
}

// Error implements error.
func (e *ConfigError) Error() string { return e.Path + ": " + e.Msg }

// Validate checks the section without compiling conditions; New checks everything. The
// error joins one *ConfigError per problem.
func (c *Config) Validate() error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, &ConfigError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if c.Default != "" && c.Default != DefaultAllow && c.Default != DefaultDeny {
		bad("default", "%q is neither allow nor deny", c.Default)
	}
	for i, m := range c.ApprovalFor {
		if !slices.Contains(mutations, m) {
			bad(fmt.Sprintf("approval_for[%d]", i), "%q is not a mutation class (%s)", m, mutationList())
		}
	}
	for name, z := range c.Zones {
		if _, ok := parseZone(name); !ok {
			bad("zones."+name, "%q is not a trust zone (external, internal, operator, local)", name)
		}
		for i, k := range z.Reach {
			if !slices.Contains(kinds, k) {
				bad(fmt.Sprintf("zones.%s.reach[%d]", name, i), "%q is not a target kind (builtin, grpc, mcp, nekte)", k)
			}
		}
	}
	ids := make(map[string]int, len(c.Rules))
	seen := make(map[string]int, len(c.Rules))
	for i, r := range c.Rules {
		path := fmt.Sprintf("rules[%d]", i)
		for _, msg := range r.problems() {
			bad(path, "%s", msg)
		}
		if r.ID != "" {
			if j, dup := ids[r.ID]; dup {
				bad(path+".id", "id %q is also used by rules[%d]", r.ID, j)
			}
			ids[r.ID] = i
		}
		if kind, pat, ok := r.Match.only(); ok {
			key := string(kind) + "\x00" + normalize(kind, pat)
			if j, dup := seen[key]; dup {
				bad(path+".match", "rules[%d] has the same match", j)
			}
			seen[key] = i
		}
	}
	return errors.Join(errs...)
}

// problems lists what is wrong with r on its own.
func (r *Rule) problems() []string {
	var out []string
	if _, _, ok := r.Match.only(); !ok {
		out = append(out, "match must set exactly one of method, capability, mcp_tool, grpc_method, mcp_resource, mcp_prompt")
	}
	for _, f := range []struct{ name, pattern, shape string }{
		{"mcp_tool", r.Match.MCPTool, "<server>/<tool>"},
		{"mcp_resource", r.Match.MCPResource, "<server>/<uri>"},
		{"mcp_prompt", r.Match.MCPPrompt, "<server>/<prompt>"},
	} {
		if f.pattern != "" && !strings.Contains(f.pattern, "/") {
			out = append(out, fmt.Sprintf("match.%s %q is not %s", f.name, f.pattern, f.shape))
		}
	}
	if r.Mutation != "" && !slices.Contains(mutations, r.Mutation) {
		out = append(out, fmt.Sprintf("mutation %q is not a mutation class (%s)", r.Mutation, mutationList()))
	}
	for _, s := range r.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n") {
			out = append(out, fmt.Sprintf("scope %q is empty or contains white space", s))
		}
	}
	if len(r.When) > MaxWhenBytes {
		out = append(out, fmt.Sprintf("when is %d bytes long; at most %d are allowed", len(r.When), MaxWhenBytes))
	}
	return out
}

// matchKind names the identity a rule matches on.
type matchKind string

const (
	byMethod     matchKind = "method"
	byCapability matchKind = "capability"
	byMCPTool    matchKind = "mcp_tool"
	byGRPCMethod matchKind = "grpc_method"
	byResource   matchKind = "mcp_resource"
	byPrompt     matchKind = "mcp_prompt"
)

// only returns the one field set, with its pattern; ok is false unless exactly one is.
func (m Match) only() (kind matchKind, pattern string, ok bool) {
	n := 0
	for _, f := range []struct {
		k matchKind
		p string
	}{{byMethod, m.Method}, {byCapability, m.Capability}, {byMCPTool, m.MCPTool}, {byGRPCMethod, m.GRPCMethod},
		{byResource, m.MCPResource}, {byPrompt, m.MCPPrompt}} {
		if f.p != "" {
			kind, pattern = f.k, f.p
			n++
		}
	}
	return kind, pattern, n == 1
}

// normalize returns the pattern as it is matched (gRPC methods without a leading "/").
func normalize(kind matchKind, pattern string) string {
	if kind == byGRPCMethod {
		return strings.TrimPrefix(pattern, "/")
	}
	return pattern
}

func mutationList() string {
	s := make([]string, len(mutations))
	for i, m := range mutations {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// parseZone returns the trust zone named name.
func parseZone(name string) (gateway.TrustZone, bool) {
	for z := gateway.ZoneExternal; z <= gateway.ZoneLocal; z++ {
		if z.String() == name {
			return z, true
		}
	}
	return 0, false
}
