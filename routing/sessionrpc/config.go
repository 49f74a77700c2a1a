package sessionrpc

import (
	"fmt"
	"regexp"
)

// MethodPrefix is put before a route's name to make the method of its target.
const MethodPrefix = "session."

// RouteConfig is one entry of session.routes: where the requests of a route run. Exactly
// one of Upstream, GRPC and Capability is set.
type RouteConfig struct {
	// Name selects the route (?route=<name> on /session; the first route is the default)
	// and makes its method, session.<name>.
	Name string `yaml:"name" json:"name"`
	// Upstream is an agent server speaking session RPC itself.
	Upstream *UpstreamConfig `yaml:"upstream" json:"upstream,omitempty"`
	// GRPC is a routed gRPC server-streaming method and the mapping of its messages onto
	// events.
	GRPC *GRPCConfig `yaml:"grpc" json:"grpc,omitempty"`
	// Capability is a method of the routing table (a NEKTE capability, an MCP tool, an
	// agent-link operator) run once per request.
	Capability *CapabilityConfig `yaml:"capability" json:"capability,omitempty"`
}

// CapabilityConfig names the method a capability route calls.
type CapabilityConfig struct {
	// Method is the routed method (e.g. "mcp.echo", "agent.sha256").
	Method string `yaml:"method" json:"method"`
}

var routeName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// Method returns the method of r's target.
func (r RouteConfig) Method() string {
	if r.Capability != nil {
		return r.Capability.Method
	}
	return MethodPrefix + r.Name
}

// ValidateRoutes checks routes: names well formed and unique, one backend each.
func ValidateRoutes(routes []RouteConfig) error {
	seen := make(map[string]bool, len(routes))
	for i, r := range routes {
		if !routeName.MatchString(r.Name) {
			return fmt.Errorf("routes[%d].name: %q must match %s", i, r.Name, routeName)
		}
		if seen[r.Name] {
			return fmt.Errorf("routes[%d].name: %q is used twice", i, r.Name)
		}
		seen[r.Name] = true
		n := 0
		for _, set := range []bool{r.Upstream != nil, r.GRPC != nil, r.Capability != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("routes[%d] (%s): set exactly one of upstream, grpc, capability", i, r.Name)
		}
		if r.Capability != nil && r.Capability.Method == "" {
			return fmt.Errorf("routes[%d].capability.method is required", i)
		}
		if r.Upstream != nil {
			if err := r.Upstream.Validate(); err != nil {
				return fmt.Errorf("routes[%d].upstream: %w", i, err)
			}
		}
		if r.GRPC != nil {
			if err := r.GRPC.Validate(); err != nil {
				return fmt.Errorf("routes[%d]: %w", i, err)
			}
		}
	}
	return nil
}
