package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/capability/openrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// openRPCTarget answers rpc.discover, the OpenRPC service discovery method, with the
// configuration's OpenRPC document as the caller sees it (routing/capability/openrpc).
// It also gives the boundary the document of a caller without credentials
// (GET /openrpc.json).
type openRPCTarget struct {
	gen    *openrpc.Generator
	vis    *capability.Visibility
	routes capability.Router
}

var (
	_ gateway.Target          = (*openRPCTarget)(nil)
	_ httprpc.OpenRPCProvider = (*openRPCTarget)(nil)
)

// Name implements gateway.Target.
func (*openRPCTarget) Name() string { return "openrpc" }

// Invoke implements gateway.Target: the document of the caller's view. rpc.discover takes
// no params: absent, [] or {}; anything else is INVALID_PARAMS.
func (t *openRPCTarget) Invoke(_ context.Context, call *gateway.Call) (*gateway.Result, error) {
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

// OpenRPC implements httprpc.OpenRPCProvider: the document of a caller with no
// credentials, on the boundary, over HTTP.
func (t *openRPCTarget) OpenRPC() []byte {
	return t.document(gateway.Principal{}, gateway.ZoneExternal, gateway.ProtocolHTTP)
}

// document returns the document of what the caller (principal, zone, protocol) may call
// directly: each method the policy would let it reach as a direct call (the capability
// layer's own view, nekte.discover's, asks about calls made as capabilities), less the
// methods whose target refuses direct calls from its zone (MCP tools outside
// routing.mcp.direct_zones).
func (t *openRPCTarget) document(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol) []byte {
	callable := func(method string) bool {
		target, ok := t.routes.Lookup(method)
		if d, isDirect := target.(directCaller); ok && isDirect && !d.Direct(zone, proto) {
			return false
		}
		return !t.vis.Filters() || t.vis.Shows(p, zone, proto, method, "")
	}
	return t.gen.Document(openrpc.View{
		Capability: func(c capability.Capability) bool { return callable(c.Method) },
		Method:     callable,
	})
}

// directCaller is a target that serves some zones' direct calls only (routing/mcpbackend).
type directCaller interface {
	Direct(zone gateway.TrustZone, proto gateway.Protocol) bool
}

// routeOpenRPC routes rpc.discover in rt's table to the document of rt's catalog: the
// NEKTE catalog when NEKTE is on, else one built from the table's targets as it is (the
// same sources). The built-in methods beside the catalog are the nekte.* methods and every
// other method the table routes by name.
func (rt *runtime) routeOpenRPC() error {
	var catalog *capability.Registry
	var builtins []openrpc.Method
	if rt.nekte != nil {
		catalog = rt.nekte.Catalog()
		builtins = openrpc.NEKTEMethods()
	} else {
		reg, err := capability.New(capability.Config{}, capability.SourcesOf(rt.table.Targets())...)
		if err != nil {
			return fmt.Errorf("openrpc: %w", err)
		}
		catalog = reg
	}
	for _, m := range rt.table.Methods() {
		if m == openrpc.MethodDiscover || slices.ContainsFunc(builtins, func(b openrpc.Method) bool { return b.Name == m }) {
			continue
		}
		t, _ := rt.table.Lookup(m)
		builtins = append(builtins, openrpc.Method{Name: m, Description: "Served by " + t.Name() + "; it publishes no schema."})
	}
	servers := openRPCServers(rt.cfg)
	t := &openRPCTarget{vis: rt.visibility, routes: rt.table, gen: openrpc.New(openrpc.Params{
		Catalog: catalog, Builtins: builtins, Version: buildVersion(), Servers: servers, Common: commonErrors(rt.cfg),
		CacheSize: rt.cfg.OpenRPC.CacheSize,
	})}
	if err := rt.table.Add(openrpc.MethodDiscover, t); err != nil {
		return err
	}
	rt.openrpc = t
	return nil
}

// openRPCServers are the URLs of the boundary's JSON-RPC endpoints: POST /rpc, and /ws
// when WebSocket is on. Their origin is nekte.endpoint's when it is set (the externally
// visible URL of /rpc, behind a proxy), else the boundary's configured address (an
// unspecified host is localhost; https with TLS). The OpenRPC meta-schema takes absolute
// URLs only, so the request's own address, unknown to rpc.discover, is not used.
func openRPCServers(cfg *Config) []openrpc.Server {
	base := boundaryOrigin(cfg.Server.Boundary) + httprpc.RPCPath
	if cfg.Nekte != nil && cfg.Nekte.Endpoint != "" {
		base = cfg.Nekte.Endpoint
	}
	out := []openrpc.Server{{Name: "jsonrpc-http", URL: base, Summary: "JSON-RPC 2.0 over HTTP POST"}}
	if u, err := url.Parse(base); err == nil && cfg.WebSocket != nil {
		u.Scheme = strings.Replace(u.Scheme, schemeHTTP, "ws", 1) // http → ws, https → wss
		u.Path = strings.TrimSuffix(u.Path, httprpc.RPCPath) + wsPath
		out = append(out, openrpc.Server{Name: "jsonrpc-ws", URL: u.String(), Summary: "JSON-RPC 2.0 over WebSocket"})
	}
	return out
}

// URL schemes of the boundary.
const (
	schemeHTTP  = "http"
	schemeHTTPS = "https"
)

// boundaryOrigin is scheme://host:port of the boundary's configured address.
func boundaryOrigin(b BoundaryConfig) string {
	scheme := schemeHTTP
	if b.TLS != nil {
		scheme = schemeHTTPS
	}
	host, port, err := net.SplitHostPort(b.Addr)
	if err != nil {
		host, port = "", "8080"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// commonErrors are the codes any method can answer in cfg: openrpc.DefaultCommon and the
// refusals of the stages cfg puts in the chain (chain.go).
func commonErrors(cfg *Config) []schemas.Code {
	out := slices.Clone(openrpc.DefaultCommon)
	if !cfg.Auth.AnonymousOnly() {
		out = append(out, schemas.CodeAuthentication)
	}
	if cfg.Policy != nil {
		out = append(out, schemas.CodeAuthorization, schemas.CodeInsufficientScope, schemas.CodeApprovalPending, schemas.CodeApprovalDenied)
	}
	if cfg.RateLimits != nil {
		out = append(out, schemas.CodeRateLimited, schemas.CodeQuota)
	}
	if cfg.Admission != nil {
		out = append(out, schemas.CodeOverloaded)
	}
	if cfg.Breakers != nil {
		out = append(out, schemas.CodeCircuitOpen)
	}
	return out
}

// OpenRPC implements httprpc.Runtime: the provider of this configuration's document.
func (rt *runtime) OpenRPC() httprpc.OpenRPCProvider {
	if rt.openrpc == nil {
		return nil
	}
	return rt.openrpc
}
