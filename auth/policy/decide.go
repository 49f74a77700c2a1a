package policy

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Decide decides one call. The checks run cheapest first, and the first that fails
// decides:
//
//  1. zone: the caller's trust zone must reach the target's kind (see reaches);
//  2. rule: the most specific matching rule applies (see match); with none, policy.default
//     decides — deny refuses the call, allow lets it through as an unclassified write;
//  3. scopes: the caller must hold every scope the rule requires;
//  4. condition: the rule's when must evaluate to true; false, an evaluation error (a
//     missing key, the cost limit) and params that do not decode strictly all deny.
func (e *Engine) Decide(in Input) Decision {
	if !e.reaches(in.Zone, in.Protocol, in.Subject) {
		k := reachKind(in.Subject)
		return Decision{Denial: DeniedZone, zone: in.Zone, kind: k,
			Reason: fmt.Sprintf("the %s zone may not reach %s targets", in.Zone, k)}
	}
	r := e.match(in.Subject)
	if r == nil {
		if e.defaultDeny {
			return Decision{Denial: DeniedNoRule, Mutation: NonIdempotentWrite, Reason: "no rule matches and policy.default is deny"}
		}
		r = &e.implicit
		if in.Subject.reads() {
			r = &e.implicitRead
		}
	}
	d := Decision{Rule: r.id, Mutation: r.mutation, NeedsApproval: r.needsApproval, Scopes: r.scopes}
	if missing := missingScopes(r.scopes, in.Principal.Scopes); len(missing) > 0 {
		d.Denial, d.Missing = DeniedScope, missing
		d.Reason = "missing scopes " + strings.Join(missing, " ")
		return d
	}
	if r.when != nil {
		vars, err := variables(in, r.when)
		if err != nil {
			d.Denial, d.Reason = DeniedParams, err.Error()
			return d
		}
		ok, err := r.when.eval(vars)
		if !ok {
			d.Denial, d.Reason = DeniedCondition, "condition is false"
			if err != nil {
				d.Reason = "condition failed: " + err.Error()
			}
			return d
		}
	}
	d.Allowed = true
	d.Reason = "allowed"
	return d
}

// Filter reports, for each subject, whether the caller would see it in a catalog
// (nekte.discover, MCP tools/list): its zone reaches the subject's kind and it holds the
// scopes of the rule that matches — or no rule matches and policy.default is allow.
// Conditions are not evaluated: they may read params, which a listing has none of; a
// subject shown can still be refused when called.
func (e *Engine) Filter(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol, subjects []Subject) []bool {
	out := make([]bool, len(subjects))
	for i, s := range subjects {
		if !e.reaches(zone, proto, s) {
			continue
		}
		if r := e.match(s); r != nil {
			out[i] = len(missingScopes(r.scopes, p.Scopes)) == 0
		} else {
			out[i] = !e.defaultDeny
		}
	}
	return out
}

// FilterKey names what Filter reads of a caller's principal: the set of its scopes (the
// order and repetitions of Principal.Scopes do not change an answer). Two principals with
// the same FilterKey get the same answers from Filter for every subject, zone and
// protocol, which is what lets a listing narrowed by Filter be shared between them (the
// MCP face's list cache). Filter must read nothing else of the principal — its subject,
// tier, claims — without FilterKey naming it too.
func (e *Engine) FilterKey(p gateway.Principal) string {
	scopes := slices.Clone(p.Scopes)
	slices.Sort(scopes)
	scopes = slices.Compact(scopes)
	var b strings.Builder
	for _, s := range scopes {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	return b.String()
}

// reachKind is the kind of target a call reaches for the zone check: a call the
// capability layer makes (nekte.invoke, nekte.delegate) reaches NEKTE, whatever target
// the capability runs on — capability invocation is the sanctioned path to a target,
// and nekte.invoke itself was checked against KindNekte on its way in.
func reachKind(s Subject) Kind {
	if s.Capability != "" {
		return KindNekte
	}
	return s.Kind
}

// reaches reports whether a caller in zone, over proto, may reach the subject's target.
// A call over MCP (the MCP face, `gatehouse stdio`) to an MCP tool is always allowed:
// those faces exist to serve the tool catalog, exactly as routing.mcp.direct_zones lets
// them through; rules still apply to it.
func (e *Engine) reaches(zone gateway.TrustZone, proto gateway.Protocol, s Subject) bool {
	k := reachKind(s)
	if proto == gateway.ProtocolMCP && k == KindMCP {
		return true
	}
	if int(zone) >= len(e.reach) {
		return false
	}
	return slices.Contains(e.reach[zone], k)
}

// match returns the rule for s, nil when none matches. The order, most specific first:
//
//  1. an exact pattern (no wildcard) beats every glob; among exact matches of different
//     identities, mcp_tool, grpc_method, mcp_resource and mcp_prompt beat capability,
//     which beats method;
//  2. among globs, the one with more literal (non-wildcard) characters wins; then the
//     identity order of 1; then the rule written first.
func (e *Engine) match(s Subject) *rule {
	ids := identities(s)
	var best *rule
	for _, id := range ids {
		if r, ok := e.exact[id.kind][id.name]; ok && (best == nil || rank(r.kind) > rank(best.kind)) {
			best = r
		}
	}
	if best != nil {
		return best
	}
	for _, r := range e.globs {
		name, ok := identityOf(ids, r.kind)
		if ok && r.glob.Match(name) && moreSpecific(r, best) {
			best = r
		}
	}
	return best
}

// moreSpecific reports whether glob rule a is more specific than b (nil: any a is).
func moreSpecific(a, b *rule) bool {
	switch {
	case b == nil:
		return true
	case a.glob.Literal() != b.glob.Literal():
		return a.glob.Literal() > b.glob.Literal()
	case rank(a.kind) != rank(b.kind):
		return rank(a.kind) > rank(b.kind)
	default:
		return a.index < b.index
	}
}

func rank(k matchKind) int {
	switch k {
	case byMCPTool, byGRPCMethod, byResource, byPrompt:
		return 3
	case byCapability:
		return 2
	default:
		return 1
	}
}

// identity is one name a subject can be matched by.
type identity struct {
	kind matchKind
	name string
}

// identities returns the names s is known by; unknown ones are left out.
func identities(s Subject) []identity {
	out := make([]identity, 0, 3)
	out = append(out, identity{byMethod, s.Method})
	if s.Capability != "" {
		out = append(out, identity{byCapability, s.Capability})
	}
	if t := s.mcpTool(); t != "" {
		out = append(out, identity{byMCPTool, t})
	}
	if s.GRPCMethod != "" {
		out = append(out, identity{byGRPCMethod, strings.TrimPrefix(s.GRPCMethod, "/")})
	}
	if r := s.mcpResource(); r != "" {
		out = append(out, identity{byResource, r})
	}
	if p := s.mcpPrompt(); p != "" {
		out = append(out, identity{byPrompt, p})
	}
	return out
}

func identityOf(ids []identity, k matchKind) (string, bool) {
	for _, id := range ids {
		if id.kind == k {
			return id.name, true
		}
	}
	return "", false
}

// missingScopes returns the scopes of required that held lacks, in required's order.
func missingScopes(required, held []string) []string {
	var missing []string
	for _, s := range required {
		if !slices.Contains(held, s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// variables returns the activation of a condition: every variable of Environment, with
// claims and params built only when the condition reads them.
func variables(in Input, c *condition) (map[string]any, error) {
	scopes := in.Principal.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	vars := map[string]any{
		"principal.sub":       in.Principal.Subject,
		"principal.scopes":    scopes,
		"principal.anonymous": in.Principal.Anonymous,
		"call.method":         in.Subject.Method,
		"call.capability":     in.Subject.Capability,
		"call.zone":           in.Zone.String(),
		"call.protocol":       in.Protocol.String(),
		"call.target":         string(in.Subject.Kind),
		"call.mcp_tool":       in.Subject.mcpTool(),
		"call.grpc_method":    strings.TrimPrefix(in.Subject.GRPCMethod, "/"),
		"call.mcp_resource":   in.Subject.mcpResource(),
		"call.mcp_prompt":     in.Subject.mcpPrompt(),
		varClaims:             map[string]any{},
		varParams:             map[string]any{},
	}
	if c.usesClaims && in.Principal.Claims != nil {
		vars[varClaims] = celValue(in.Principal.Claims)
	}
	if c.usesParams {
		p, err := DecodeParams(in.Params)
		if err != nil {
			return nil, err
		}
		vars[varParams] = p
	}
	return vars, nil
}

// Err returns the error a refused call gets, nil when d allows it:
//
//   - DeniedScope: INSUFFICIENT_SCOPE (4002) with data.missing_scopes;
//   - DeniedZone: AUTHORIZATION_FAILED (4000) with data {zone, target};
//   - DeniedNoRule, DeniedCondition: AUTHORIZATION_FAILED with data.reason "no_rule" or
//     "condition" (the condition's text and values are for logs only);
//   - DeniedParams: INVALID_PARAMS (-32602).
func (d Decision) Err() *gateway.Error {
	switch d.Denial {
	case NotDenied:
		return nil
	case DeniedScope:
		return gateway.NewError(schemas.CodeInsufficientScope).With("missing_scopes", slices.Clone(d.Missing)).
			With("recovery_hint", "call again with a credential that carries the missing scopes")
	case DeniedZone:
		return gateway.Errorf(schemas.CodeAuthorization, "Callers in the %s zone may not reach %s targets", d.zone, d.kind).
			With("zone", d.zone.String()).With("target", string(d.kind))
	case DeniedNoRule:
		return gateway.Errorf(schemas.CodeAuthorization, "No policy rule allows this call").With("reason", "no_rule")
	case DeniedParams:
		return gateway.Errorf(schemas.CodeInvalidParams,
			"params must be valid JSON without a member name repeated in one object (names compared ignoring case)")
	default:
		return gateway.Errorf(schemas.CodeAuthorization, "The call does not meet the policy's condition").With("reason", "condition")
	}
}

// decisionKey is the context key of a call's decision.
type decisionKey struct{}

// WithDecision returns ctx carrying d, the decision for the call ctx runs, for the stages
// after the policy stage (approval).
func WithDecision(ctx context.Context, d Decision) context.Context {
	return context.WithValue(ctx, decisionKey{}, d)
}

// DecisionFrom returns the decision WithDecision put in ctx; ok is false when there is none
// (no policy configured).
func DecisionFrom(ctx context.Context) (d Decision, ok bool) {
	d, ok = ctx.Value(decisionKey{}).(Decision)
	return d, ok
}

// ChangesState reports whether the call ctx runs may change state: unless the policy
// classified it READ_ONLY. Without a decision (no policy section) every call is taken to
// change state, so an idempotency key a caller sends is always honoured (the idempotency
// stage's classifier).
func ChangesState(ctx context.Context, _ *gateway.Call) bool {
	d, ok := DecisionFrom(ctx)
	return !ok || d.Mutation != ReadOnly
}

// Repeatable reports whether the policy classified the call ctx runs READ_ONLY or
// IDEMPOTENT_WRITE. Without a decision (no policy section) no call is classified, and only
// an idempotency key makes one retryable (the retry stage's classifier).
func Repeatable(ctx context.Context, _ *gateway.Call) bool {
	d, ok := DecisionFrom(ctx)
	return ok && (d.Mutation == ReadOnly || d.Mutation == IdempotentWrite)
}
