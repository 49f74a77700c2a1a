package server

import (
	"slices"
	"time"

	mcpface "github.com/gatehouse-dev/gatehouse/faces/mcp"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

// newMCPFace builds the MCP face of cfg over the server (mcpGateway).
func (s *Server) newMCPFace(cfg mcpface.Config) *mcpface.Face {
	return mcpface.New(mcpGateway{s}, mcpface.Options{Config: cfg, Version: buildVersion(),
		State: s.kv, Now: s.opts.Now, Log: s.log, Stdio: s.stdio})
}

// mcpGateway is the server as the MCP face sees it (mcpface.Gateway).
type mcpGateway struct{ s *Server }

var (
	_ mcpface.Gateway    = mcpGateway{}
	_ mcpface.Runtime    = mcpRuntime{}
	_ mcpface.Visibility = (*capability.Visibility)(nil)
)

// Acquire implements mcpface.Gateway.
func (g mcpGateway) Acquire() mcpface.Runtime { return mcpRuntime{g.s.acquire()} }

// Draining implements mcpface.Gateway.
func (g mcpGateway) Draining() bool { return g.s.draining.Load() }

// mcpRuntime is one configuration as the MCP face sees it (mcpface.Runtime); the
// faces.Runtime methods are the runtime's own.
type mcpRuntime struct{ *runtime }

// Table implements mcpface.Runtime.
func (r mcpRuntime) Table() *routing.Table { return r.table }

// Visibility implements mcpface.Runtime.
func (r mcpRuntime) Visibility() mcpface.Visibility {
	return r.visibility
}

// WriteTimeout implements mcpface.Runtime.
func (r mcpRuntime) WriteTimeout() time.Duration { return r.cfg.Server.Boundary.WriteTimeout }

// Issuers implements mcpface.Runtime.
func (r mcpRuntime) Issuers() []string { return r.authn.Issuers() }

// Scopes implements mcpface.Runtime: the scopes the policy's rules require, sorted and
// each once; none without a policy.
func (r mcpRuntime) Scopes() []string {
	if r.cfg.Policy == nil {
		return nil
	}
	var out []string
	for _, rule := range r.cfg.Policy.Rules {
		out = append(out, rule.Scopes...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
