package server

import (
	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/server/config"
)

// mcpBackendPrefix names an MCP server as a backend of the breaker and retry stages:
// "mcp/" + the server's name in routing.mcp.servers.
const mcpBackendPrefix = "mcp/"

// breakerChainStage returns the breaker stage of c: nil, out of the chain, without a
// breakers section. The breakers it makes are kept in c for the readiness detail
// (trippedBreakers); a configuration is built into one runtime, so they are that
// runtime's.
func (c *Config) breakerChainStage() gateway.Middleware {
	if c.Breakers == nil {
		c.breakers = nil
		return nil
	}
	c.breakers = resilience.NewBreakers(*c.Breakers)
	return c.breakers.Middleware(backendOf)
}

// backendOf is the resilience.BackendOf of the server's targets: a gRPC backend (and any
// target the server does not know, such as an embedder's) by its name; an MCP tool by the
// upstream server that offers it, since each server is its own process or endpoint, and
// "" when the catalog does not list the tool (the call fails without reaching one); the
// NEKTE service and the demo target, which run in the process, by "". A call the NEKTE
// service makes on a capability's behalf goes through the pipeline again and is judged
// against the backend it reaches.
func backendOf(call *gateway.Call) string {
	switch t := call.Target.(type) {
	case nil, *nekteRoute, *nekteCore, *demo.Spec:
		return ""
	case *mcpbackend.Target:
		upstream, _ := mcpTool(t, call)
		if upstream == "" {
			return ""
		}
		return mcpBackendPrefix + upstream
	default:
		return t.Name()
	}
}

// trippedBreakers returns the breakers of c's runtime that are open or half-open, for
// /readyz; nil when there are none or no breakers section.
func (c *Config) trippedBreakers() []resilience.BreakerState {
	if c.breakers == nil {
		return nil
	}
	var out []resilience.BreakerState
	for _, s := range c.breakers.States() {
		if s.State != resilience.BreakerClosed {
			out = append(out, s)
		}
	}
	return out
}

// validateBreakers reports the problems of the breakers section at their paths, among
// them a backends entry that names no backend of the routing section (a typo would
// otherwise leave a backend on the defaults unnoticed).
func (c *Config) validateBreakers(doc *config.Document) config.ErrorList {
	if c.Breakers == nil {
		return nil
	}
	var errs config.ErrorList
	for _, p := range c.Breakers.Validate() {
		errs = append(errs, doc.Errorf("breakers."+p.Path, "%s", p.Msg))
	}
	known := c.backendNames()
	for name := range c.Breakers.Backends {
		if name != "" && !known[name] {
			errs = append(errs, doc.Errorf("breakers."+resilience.BackendPath(name),
				"%q is not a backend: name a gRPC backend of routing.grpc, or an MCP server of routing.mcp.servers as %q", name, mcpBackendPrefix+"NAME"))
		}
	}
	return errs
}

// backendNames returns the names backendOf gives the configured backends.
func (c *Config) backendNames() map[string]bool {
	known := make(map[string]bool)
	for _, b := range c.Routing.GRPC {
		known[b.Name] = true
	}
	if m := c.Routing.MCP; m != nil {
		for _, s := range m.Servers {
			known[mcpBackendPrefix+s.Name] = true
		}
	}
	return known
}
