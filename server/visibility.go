package server

import (
	"errors"

	"github.com/gatehouse-dev/gatehouse/auth/policy"
	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// visibility decides what a caller sees in the catalogs of one configuration
// (nekte.discover, the agent card, the MCP face's tools/list, resources/list,
// resources/templates/list and prompts/list — faces/mcp): an entry is shown when the
// policy's Filter would let the caller reach it — its zone reaches the target's kind and
// it holds the scopes of the rule that matches. Each entry is described as the policy
// stage describes the call that runs it (policy.Engine.Subject), so a listing and the
// decision on a call agree. Listing decides nothing: a call of an entry that is hidden
// still goes through the policy stage, which refuses it with its own error. Rule
// conditions are not evaluated, so an entry shown can still be refused when called.
type visibility struct {
	// engine describes calls and filters them; nil when the configuration has no policy
	// section, and then everything is shown.
	engine *policy.Engine
	table  *routing.Table
	// hideAll is set when the policy section does not compile: the policy stage refuses
	// every call then, so nothing is shown.
	hideAll bool
}

// newVisibility returns the visibility of a runtime's policy pol, whose methods table
// routes.
func newVisibility(pol runtimePolicy, table *routing.Table) *visibility {
	return &visibility{engine: pol.engine, table: table, hideAll: pol.err != nil}
}

// filters reports whether the visibility hides anything from anyone: false without a
// policy section.
func (v *visibility) filters() bool { return v.hideAll || v.engine != nil }

// shows reports whether the caller (principal, zone, protocol) sees the entry run by
// method as capability id ("" for a direct call). A method no target serves is hidden.
func (v *visibility) shows(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol, method, id string) bool {
	return v.showsCall(p, zone, proto, &gateway.Call{Method: method, Capability: id})
}

// showsCall is shows for a call described with its params (an MCP face's resources/read,
// prompts/get or completion/complete names what it reaches in them); it sets call.Target.
func (v *visibility) showsCall(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol, call *gateway.Call) bool {
	if v.hideAll {
		return false
	}
	if v.engine == nil {
		return true
	}
	t, ok := v.table.Lookup(call.Method)
	if !ok {
		return false
	}
	call.Target = t
	return v.engine.Filter(p, zone, proto, []policy.Subject{v.engine.Subject(call)})[0]
}

// capabilities returns the capability filter of the caller (capability.DiscoverOptions'
// Visible): a capability runs its method through the pipeline as the caller, with the
// capability's id (capabilityInvoker). Nil when nothing is hidden.
func (v *visibility) capabilities(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol) func(capability.Capability) bool {
	if !v.filters() {
		return nil
	}
	return func(c capability.Capability) bool { return v.shows(p, zone, proto, c.Method, c.ID) }
}

// anonymous is who the agent card is filtered for: it is served to anyone, so it lists
// what a caller with no credentials — no scopes, on the boundary — may see.
func (v *visibility) anonymous() func(capability.Capability) bool {
	return v.capabilities(gateway.Principal{}, gateway.ZoneExternal, gateway.ProtocolHTTP)
}

// discover answers nekte.discover from the caller's view of catalog: the params decoded
// as the NEKTE service decodes them (capability.DecodeDiscover), the capabilities the
// caller may not see left out before filtering and paging.
func (v *visibility) discover(catalog *capability.Registry, call *gateway.Call) (*gateway.Result, error) {
	p, o, err := capability.DecodeDiscover(call.Params)
	if err != nil {
		return nil, discoverParamError(err)
	}
	o.Visible = v.capabilities(call.Principal, call.Zone, call.Protocol)
	raw, err := catalog.DiscoverWith(p, o)
	if err != nil {
		return nil, gateway.AsError(err)
	}
	return gateway.NewResult(raw), nil
}

// discoverParamError is INVALID_PARAMS for params DecodeDiscover refused, in the form the
// NEKTE service answers them: data {reason, field}.
func discoverParamError(err error) error {
	pe, ok := errors.AsType[*nk.ParamError](err)
	if !ok {
		return gateway.AsError(err)
	}
	e := gateway.Errorf(schemas.CodeInvalidParams, "Invalid params: %s", pe.Error()).With("reason", pe.Reason)
	if pe.Field != "" {
		e = e.With("field", pe.Field)
	}
	return e
}
