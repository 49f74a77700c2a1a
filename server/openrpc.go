package server

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/capability/openrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

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
	builtins = openrpc.Routed(builtins, rt.table.Methods(), rt.table.Lookup)
	servers := openRPCServers(rt.cfg)
	t := openrpc.NewTarget(openrpc.New(openrpc.Params{
		Catalog: catalog, Builtins: builtins, Version: buildVersion(), Servers: servers, Common: commonErrors(rt.cfg),
		CacheSize: rt.cfg.OpenRPC.CacheSize,
	}), rt.visibility, rt.table)
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
