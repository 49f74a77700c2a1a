package mcpbackend

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// MethodToolsCall is the MCP-shaped method a Target also answers, with params
// {"name": tool, "arguments": {…}} and the CallToolResult as result.
const MethodToolsCall = "tools/call"

// Target routes JSON-RPC calls to the bridge's tools, resources and prompts. It answers
// three shapes:
//
//   - a method per tool under the namespace: "<namespace><exposed tool name>" with the
//     tool's arguments as params (an object). The result is the CallToolResult; a result
//     with isError set becomes the error TOOL_FAILED (1001) with data {upstream, tool,
//     result}, so JSON-RPC callers see a failed tool as a failed call.
//   - MethodToolsCall, when the table routes it here: MCP's own params and result, with
//     isError results returned as results.
//   - the read methods "<namespace>resources/read", "<namespace>prompts/get" and
//     "<namespace>completion/complete" (reads.go): MCP's own params and result.
//
// Each shape is a direct call of the bridge, and the trust zone decides who may make one:
// a call from a zone not among the target's direct zones (WithDirectZones; by default
// internal, operator and local) is refused with AUTHORIZATION_FAILED (4000, data {zone,
// method}) before anything is parsed or sent upstream. Calls arriving over MCP
// (gateway.ProtocolMCP: the MCP face, `gatehouse stdio`) are always let through, since
// those faces exist to serve the catalog, and so are calls the capability layer makes
// (gateway.Call.Capability set: nekte.invoke, nekte.delegate). The check lives here, on the one path every
// face's call takes to the bridge, so no face can bypass it.
//
// When the call's context carries a progress sink (gateway.WithProgress), the upstream is
// asked for progress and each report is passed to the sink while the call runs.
type Target struct {
	b      *Bridge
	ns     string
	direct zoneSet
}

var (
	_ gateway.Target  = (*Target)(nil)
	_ gateway.Readier = (*Target)(nil)
	_ gateway.Closer  = (*Target)(nil)
)

// TargetOption configures a Target.
type TargetOption func(*Target)

// WithDirectZones sets the trust zones whose callers may call tools directly as methods
// (see Target), replacing the default DefaultDirectZones. No zones leaves tools to the
// MCP faces alone.
func WithDirectZones(zones ...gateway.TrustZone) TargetOption {
	return func(t *Target) { t.direct = newZoneSet(zones) }
}

// DefaultDirectZones returns the trust zones whose callers may call tools directly when
// nothing else is configured: every zone but the external one, whose callers reach tools
// only as capabilities (nekte.invoke).
func DefaultDirectZones() []gateway.TrustZone {
	return []gateway.TrustZone{gateway.ZoneInternal, gateway.ZoneOperator, gateway.ZoneLocal}
}

// Target returns a gateway.Target for the bridge's tools with method names under
// namespace (e.g. "mcp." → "mcp.everything__echo"). Closing it closes the bridge.
func (b *Bridge) Target(namespace string, opts ...TargetOption) *Target {
	t := &Target{b: b, ns: namespace, direct: newZoneSet(DefaultDirectZones())}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Name implements gateway.Target.
func (t *Target) Name() string { return "mcp" }

// Routes returns what to route to t: every method under the namespace. MethodToolsCall
// is not included: whether to route it here is the server's choice; who may call it is
// then checked like any direct call.
func (t *Target) Routes() (methods, prefixes []string) { return nil, []string{t.ns} }

// Connected returns the bridge's live upstream sessions by transport (Bridge.Connected).
func (t *Target) Connected() map[string]int { return t.b.Connected() }

// WithheldByUpstream is Bridge.WithheldByUpstream.
func (t *Target) WithheldByUpstream() map[string]int { return t.b.WithheldByUpstream() }

// Ready implements gateway.Readier.
func (t *Target) Ready(ctx context.Context) error { return t.b.Ready(ctx) }

// Close implements gateway.Closer.
func (t *Target) Close() error { return t.b.Close() }

// Invoke implements gateway.Target.
func (t *Target) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	if err := t.permit(call); err != nil {
		return nil, err
	}
	if op := t.readOp(call.Method); op != "" {
		return t.invokeRead(ctx, op, call)
	}
	name, args, mcpShaped, err := t.parse(call)
	if err != nil {
		return nil, err
	}
	if err := t.b.checkInput(name, args); err != nil { // input.go: before any upstream sees it
		return nil, err
	}
	res, err := t.b.CallTool(ctx, name, args)
	if err != nil {
		return nil, err
	}
	if !mcpShaped {
		if err := t.toolFailed(name, res); err != nil {
			return nil, err
		}
	}
	return gateway.NewResult(res), nil
}

// Direct reports whether a caller in zone over proto may call tools directly as methods
// (see Target), as a call that is not the capability layer's: the OpenRPC document lists
// the tools only to such callers.
func (t *Target) Direct(zone gateway.TrustZone, proto gateway.Protocol) bool {
	return proto == gateway.ProtocolMCP || t.direct.has(zone)
}

// permit refuses a direct call from a zone that may not make one (see Target).
func (t *Target) permit(call *gateway.Call) error {
	if call.Capability != "" || t.Direct(call.Zone, call.Protocol) {
		return nil
	}
	return gateway.Errorf(schemas.CodeAuthorization,
		"MCP tools are reachable from the %s zone only as capabilities (nekte.invoke)", call.Zone).
		With("zone", call.Zone.String()).With("method", call.Method)
}

// zoneSet is a set of trust zones, one bit each.
type zoneSet uint32

func newZoneSet(zones []gateway.TrustZone) zoneSet {
	var s zoneSet
	for _, z := range zones {
		s |= 1 << z
	}
	return s
}

func (s zoneSet) has(z gateway.TrustZone) bool { return z < 32 && s&(1<<z) != 0 }

// parse returns the tool name and arguments of a call.
func (t *Target) parse(call *gateway.Call) (name string, args json.RawMessage, mcpShaped bool, err error) {
	if call.Method == MethodToolsCall {
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(call.Params, &p); err != nil || p.Name == "" {
			return "", nil, true, gateway.NewError(schemas.CodeInvalidParams).With("reason", "tools/call takes {name, arguments}")
		}
		return p.Name, p.Arguments, true, nil
	}
	name, ok := strings.CutPrefix(call.Method, t.ns)
	if !ok || name == "" {
		return "", nil, false, gateway.NewError(schemas.CodeMethodNotFound)
	}
	return name, call.Params, false, nil
}

// toolFailed returns TOOL_FAILED for a CallToolResult with isError set.
func (t *Target) toolFailed(name string, res json.RawMessage) error {
	var r struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || !r.IsError {
		return nil //nolint:nilerr // a result that is not a JSON object is passed on as it is
	}
	upstream := ""
	if rt, ok := t.b.routes.Load().tools[name]; ok && rt.up != nil {
		upstream = rt.up.cfg.Name
	}
	kind := schemas.KindOf(schemas.CodeToolFailed)
	return gateway.WireError(kind.Code, kind.Message, map[string]any{"upstream": upstream, "tool": name, "result": res})
}

// Catalog returns the bridge's current catalog.
func (t *Target) Catalog() *Catalog { return t.b.Catalog() }

// Namespace returns the method prefix of the target's tools.
func (t *Target) Namespace() string { return t.ns }

// OnEvent registers fn for the bridge's catalog and resource events (Bridge.OnEvent).
func (t *Target) OnEvent(fn func(Event)) (remove func()) { return t.b.OnEvent(fn) }

// ReadResource reads a resource from the upstream that offers it (Bridge.ReadResource).
func (t *Target) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	return t.b.ReadResource(ctx, uri)
}

// GetPrompt gets a prompt from the upstream that offers it; args are the prompt's
// arguments (Bridge.GetPrompt).
func (t *Target) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return t.b.GetPrompt(ctx, name, raw)
}

// Subscribe subscribes to a resource upstream (Bridge.Subscribe).
func (t *Target) Subscribe(ctx context.Context, uri string) error { return t.b.Subscribe(ctx, uri) }

// Unsubscribe drops a resource subscription upstream (Bridge.Unsubscribe).
func (t *Target) Unsubscribe(ctx context.Context, uri string) error { return t.b.Unsubscribe(ctx, uri) }
