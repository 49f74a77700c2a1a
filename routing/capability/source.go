package capability

import (
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/a2a"
	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// Source supplies the capabilities of one target. The registry asks each source for its
// Generation on every read and rebuilds its snapshot when one has changed, so a source
// never needs to notify anyone. Both methods are safe for concurrent use and cheap:
// Generation runs on every discover and invoke.
type Source interface {
	// Generation changes whenever the source's capabilities may have changed.
	Generation() uint64
	// Capabilities returns the source's capabilities and the generation they belong to.
	// The registry fills in Hash, and Category when it is empty.
	Capabilities() (caps []Capability, generation uint64)
}

// Provider is implemented by targets that describe their own methods as capabilities
// (the built-in demo target).
type Provider interface {
	Capabilities() []Capability
}

// SourcesOf returns a source for each target that has capabilities: MCP bridges
// (*mcpbackend.Target), gRPC backends (*grpcbackend.Backend), the agent link
// (*agentlink.Target), upstream A2A agents (*a2a.Target) and Providers. Other targets are left out.
func SourcesOf(targets []gateway.Target) []Source {
	var out []Source
	for _, t := range targets {
		switch t := t.(type) {
		case *mcpbackend.Target:
			out = append(out, MCPSource(t))
		case *grpcbackend.Backend:
			out = append(out, GRPCSource(t))
		case *agentlink.Target:
			out = append(out, AgentSource(t))
		case *a2a.Target:
			out = append(out, A2ASource(t))
		case Provider:
			out = append(out, Static(t.Capabilities()...))
		}
	}
	return out
}

// Static returns a source of fixed capabilities.
func Static(caps ...Capability) Source { return staticSource(caps) }

type staticSource []Capability

func (staticSource) Generation() uint64 { return 0 }

func (s staticSource) Capabilities() ([]Capability, uint64) { return s, 0 }
