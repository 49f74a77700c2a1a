package openrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Target answers rpc.discover with a Generator's document as the caller sees it. It also
// gives the boundary the document of a caller without credentials (GET /openrpc.json,
// OpenRPC).
type Target struct {
	gen    *Generator
	vis    *capability.Visibility
	routes capability.Router
}

var _ gateway.Target = (*Target)(nil)

// NewTarget returns the target of gen's documents: a method is listed for a caller when
// vis lets the caller reach it as a direct call and its target in routes serves direct
// calls from the caller's zone.
func NewTarget(gen *Generator, vis *capability.Visibility, routes capability.Router) *Target {
	return &Target{gen: gen, vis: vis, routes: routes}
}

// Name implements gateway.Target.
func (*Target) Name() string { return "openrpc" }

// Invoke implements gateway.Target: the document of the caller's view. rpc.discover takes
// no params: absent, [] or {}; anything else is INVALID_PARAMS.
func (t *Target) Invoke(_ context.Context, call *gateway.Call) (*gateway.Result, error) {
	if p := bytes.TrimSpace(call.Params); len(p) > 0 && string(p) != "[]" && !isEmptyObject(p) {
		return nil, errDiscoverParams
	}
	return gateway.NewResult(t.document(call.Principal, call.Zone, call.Protocol)), nil
}

var errDiscoverParams = gateway.NewError(schemas.CodeInvalidParams).With("reason", "rpc.discover takes no params")

// isEmptyObject reports whether p is a JSON object with no members ("{}", "{ }").
func isEmptyObject(p []byte) bool {
	var m map[string]json.RawMessage
	return p[0] == '{' && json.Unmarshal(p, &m) == nil && len(m) == 0
}

// OpenRPC returns the document of a caller with no credentials, on the boundary, over
// HTTP (the boundary's GET /openrpc.json).
func (t *Target) OpenRPC() []byte {
	return t.document(gateway.Principal{}, gateway.ZoneExternal, gateway.ProtocolHTTP)
}

// document returns the document of what the caller (principal, zone, protocol) may call
// directly: each method the policy would let it reach as a direct call (the capability
// layer's own view, nekte.discover's, asks about calls made as capabilities), less the
// methods whose target refuses direct calls from its zone (MCP tools outside
// routing.mcp.direct_zones).
func (t *Target) document(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol) []byte {
	callable := func(method string) bool {
		target, ok := t.routes.Lookup(method)
		if d, isDirect := target.(directCaller); ok && isDirect && !d.Direct(zone, proto) {
			return false
		}
		return !t.vis.Filters() || t.vis.Shows(p, zone, proto, method, "")
	}
	return t.gen.Document(View{
		Capability: func(c capability.Capability) bool { return callable(c.Method) },
		Method:     callable,
	})
}

// directCaller is a target that serves some zones' direct calls only (routing/mcpbackend).
type directCaller interface {
	Direct(zone gateway.TrustZone, proto gateway.Protocol) bool
}

// Routed lists the methods a table routes by name that neither builtins nor the catalog
// describe, each as a Method saying which target serves it (it publishes no schema), after
// builtins. methods are the table's methods; lookup its targets. rpc.discover is left out.
func Routed(builtins []Method, methods []string, lookup func(string) (gateway.Target, bool)) []Method {
	out := slices.Clone(builtins)
	for _, m := range methods {
		if m == MethodDiscover || slices.ContainsFunc(builtins, func(b Method) bool { return b.Name == m }) {
			continue
		}
		t, _ := lookup(m)
		out = append(out, Method{Name: m, Description: "Served by " + t.Name() + "; it publishes no schema."})
	}
	return out
}
