package routing

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/a2a"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// Config is the routing section of the configuration file.
type Config struct {
	// Demo enables the built-in demo target when present.
	Demo *DemoConfig `yaml:"demo" json:"demo,omitempty"`
	// GRPC lists the gRPC backends and the methods routed to them.
	GRPC []grpcbackend.Config `yaml:"grpc" json:"grpc,omitempty"`
	// MCP bridges upstream MCP servers: their tools become methods under a namespace.
	MCP *MCPConfig `yaml:"mcp" json:"mcp,omitempty"`
	// A2A lists upstream A2A agents: each skill of an agent's card becomes a capability
	// and a method under the agent's prefix.
	A2A *A2AConfig `yaml:"a2a" json:"a2a,omitempty"`
}

// A2AConfig is the routing.a2a section.
type A2AConfig struct {
	// Agents are the upstream A2A agents, by card URL.
	Agents []a2a.Config `yaml:"agents" json:"agents"`
}

// BackendNames returns the names the targets of c give their backends
// (gateway.BackendOf): a gRPC backend's name, an MCP server's as
// mcpbackend.BackendPrefix + its name, an A2A agent's as a2a.BackendPrefix + its name.
func (c Config) BackendNames() map[string]bool {
	known := make(map[string]bool)
	for _, b := range c.GRPC {
		known[b.Name] = true
	}
	if m := c.MCP; m != nil {
		for _, s := range m.Servers {
			known[mcpbackend.BackendPrefix+s.Name] = true
		}
	}
	if c.A2A != nil {
		for _, a := range c.A2A.Agents {
			known[a2a.BackendPrefix+a.Name] = true
		}
	}
	return known
}

// MCPConfig is the routing.mcp section.
type MCPConfig struct {
	// Namespace is put before each tool's name to make its JSON-RPC method (default "mcp.").
	Namespace string `yaml:"namespace" json:"namespace,omitempty"`
	// Servers are the upstream MCP servers.
	Servers []mcpbackend.Config `yaml:"servers" json:"servers"`
	// DirectZones are the trust zones (external, internal, operator, local) whose callers
	// may call tools directly as methods; absent, every zone but external
	// (mcpbackend.DefaultDirectZones). Calls over MCP (the MCP face, stdio) are always
	// allowed.
	DirectZones []string `yaml:"direct_zones" json:"direct_zones,omitempty"`
	// SamplingBackend answers the sampling/createMessage requests of servers whose
	// sampling policy is "route"; ElicitationBackend the same for elicitation/create.
	SamplingBackend    *mcpbackend.RouteConfig `yaml:"sampling_backend" json:"sampling_backend,omitempty"`
	ElicitationBackend *mcpbackend.RouteConfig `yaml:"elicitation_backend" json:"elicitation_backend,omitempty"`
	// ReadCache bounds the cache of resources/read results upstreams mark cacheable
	// (ttlMs, cacheScope); on by default.
	ReadCache mcpbackend.ReadCacheConfig `yaml:"read_cache" json:"read_cache"`
}

// DefaultMCPNamespace is the method prefix of bridged MCP tools.
const DefaultMCPNamespace = "mcp."

func (c *MCPConfig) namespace() string {
	if c.Namespace == "" {
		return DefaultMCPNamespace
	}
	return c.Namespace
}

// directZones returns the configured direct zones, or the default when none are set.
func (c *MCPConfig) directZones() ([]gateway.TrustZone, error) {
	if c.DirectZones == nil {
		return mcpbackend.DefaultDirectZones(), nil
	}
	zones := make([]gateway.TrustZone, 0, len(c.DirectZones))
	for _, name := range c.DirectZones {
		z, ok := parseZone(name)
		if !ok {
			return nil, fmt.Errorf("direct_zones: %q is not a trust zone (external, internal, operator, local)", name)
		}
		zones = append(zones, z)
	}
	return zones, nil
}

// parseZone returns the trust zone named name.
func parseZone(name string) (gateway.TrustZone, bool) {
	for z := gateway.ZoneExternal; z <= gateway.ZoneLocal; z++ {
		if z.String() == name {
			return z, true
		}
	}
	return 0, false
}

// BuildOptions are what targets need beyond their configuration.
type BuildOptions struct {
	Logger *slog.Logger
	Now    func() time.Time
	// MCP are passed to the MCP bridge: the handlers of routing.mcp.sampling_backend and
	// elicitation_backend, which the server builds.
	MCP []mcpbackend.Option
	// Demo builds the target of routing.demo (the server passes demo.NewSpec); Build routes
	// DemoMethods to it. It must be set when routing.demo is.
	Demo func(DemoConfig) gateway.Target
	// GRPC, when set, returns the backend for one routing.grpc entry instead of
	// grpcbackend.New: the server hands an unchanged backend of the previous configuration
	// over on a reload (shared, not reconnected). Build closes what it returns if the
	// table cannot be built, like what it makes itself.
	GRPC func(grpcbackend.Config, *slog.Logger, func() time.Time) (*grpcbackend.Backend, error)
	// A2AObserver is told of the A2A agents' card fetches (nil: none).
	A2AObserver a2a.Observer
	// A2APrevious are the A2A agents of the configuration being replaced (Table.A2A): an
	// agent whose section is unchanged starts with its card.
	A2APrevious []*a2a.Target
}

// DemoMethods returns the methods of the built-in demo target, in the order Build adds
// them; demo.Spec serves exactly these. Validate claims them without building the target.
func DemoMethods() []string {
	return []string{"subtract", "sum", "update", "notify_hello", "get_data"}
}

// DemoConfig configures the built-in demo target.
type DemoConfig struct {
	// Delay is added to every demo call, to simulate a backend's latency in demos, load
	// tests and shutdown tests. The call still ends early if its deadline passes.
	Delay time.Duration `yaml:"delay" json:"delay,omitempty"`
}

// Build returns the method table for cfg. Targets holding resources (connections) are
// closed again if the table cannot be built; otherwise closing them is the caller's job
// (Table.Targets, gateway.Closer).
func Build(cfg Config, opts BuildOptions) (tb *Table, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	tb = NewTable()
	defer func() {
		if err != nil {
			err = errors.Join(err, tb.Close())
		}
	}()
	if cfg.Demo != nil {
		if opts.Demo == nil {
			return tb, errors.New("routing demo: no demo target (BuildOptions.Demo is nil)")
		}
		d := opts.Demo(*cfg.Demo)
		for _, m := range DemoMethods() {
			if err := tb.Add(m, d); err != nil {
				return tb, fmt.Errorf("routing demo: %w", err)
			}
		}
	}
	if m := cfg.MCP; m != nil && len(m.Servers) > 0 {
		zones, err := m.directZones()
		if err != nil {
			return tb, fmt.Errorf("routing mcp: %w", err)
		}
		bridge, err := mcpbackend.New(m.Servers, opts.Logger, opts.Now, append(slices.Clip(opts.MCP), mcpbackend.WithReadCache(m.ReadCache))...)
		if err != nil {
			return tb, fmt.Errorf("routing mcp: %w", err)
		}
		t := bridge.Target(m.namespace(), mcpbackend.WithDirectZones(zones...))
		if err := tb.AddPrefix(m.namespace(), t); err != nil {
			_ = t.Close()
			return tb, fmt.Errorf("routing mcp: %w", err)
		}
	}
	if c := cfg.A2A; c != nil {
		for _, ac := range c.Agents {
			var seed *a2a.Target
			for _, p := range opts.A2APrevious {
				if p.Config().Name == ac.Name {
					seed = p
				}
			}
			t, err := a2a.New(ac, a2a.Options{Logger: opts.Logger.With("component", "a2a"), Observer: opts.A2AObserver, Seed: seed})
			if err != nil {
				return tb, fmt.Errorf("routing a2a: %w", err)
			}
			if err := tb.AddPrefix(t.Prefix(), t); err != nil {
				_ = t.Close()
				return tb, fmt.Errorf("routing a2a: %w", err)
			}
		}
	}
	newGRPC := opts.GRPC
	if newGRPC == nil {
		newGRPC = grpcbackend.New
	}
	for _, bc := range cfg.GRPC {
		b, err := newGRPC(bc, opts.Logger, opts.Now)
		if err != nil {
			return tb, fmt.Errorf("routing grpc: %w", err)
		}
		if err := addBackend(tb, b); err != nil {
			_ = b.Close()
			return tb, fmt.Errorf("routing grpc: %w", err)
		}
	}
	return tb, nil
}

func addBackend(tb *Table, b *grpcbackend.Backend) error {
	methods, prefixes := b.Routes()
	for _, m := range methods {
		if err := tb.Add(m, b); err != nil {
			return err
		}
	}
	for _, p := range prefixes {
		if err := tb.AddPrefix(p, b); err != nil {
			return err
		}
	}
	return nil
}

// Close closes every target of the table that holds resources.
func (tb *Table) Close() error {
	var errs []error
	for _, t := range tb.Targets() {
		if c, ok := t.(gateway.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// Validate checks cfg without building anything: every backend's own rules, unique backend
// names, and no method name or prefix claimed twice.
func (c Config) Validate() error {
	owner := map[string]string{}
	claim := func(kind, name, by string) error {
		key := kind + "\x00" + name
		if prev, ok := owner[key]; ok {
			return fmt.Errorf("%s %q is served by both %q and %q", kind, name, prev, by)
		}
		owner[key] = by
		return nil
	}
	if c.Demo != nil {
		for _, m := range DemoMethods() {
			_ = claim("method", m, "demo")
		}
	}
	if m := c.MCP; m != nil {
		if err := mcpbackend.ValidateAll(m.Servers); err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
		if err := m.ReadCache.Validate(); err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
		if err := mcpbackend.ValidateRoutes(m.Servers, m.SamplingBackend, m.ElicitationBackend); err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
		if _, err := m.directZones(); err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
		if err := claim("method prefix", m.namespace(), "mcp"); err != nil {
			return err
		}
	}
	if c.A2A != nil {
		if err := a2a.ValidateAll(c.A2A.Agents); err != nil {
			return fmt.Errorf("a2a: %w", err)
		}
		for _, a := range c.A2A.Agents {
			if err := claim("method prefix", a.WithDefaults().Prefix, a2a.BackendPrefix+a.Name); err != nil {
				return err
			}
		}
	}
	names := map[string]bool{}
	for _, b := range c.GRPC {
		if names[b.Name] {
			return fmt.Errorf("two gRPC backends are named %q", b.Name)
		}
		names[b.Name] = true
		if err := b.Validate(); err != nil {
			return err
		}
		for m := range b.Methods {
			if err := claim("method", m, b.Name); err != nil {
				return err
			}
		}
		for _, s := range b.Services {
			if err := claim("method prefix", s.Prefix, b.Name); err != nil {
				return err
			}
		}
	}
	return nil
}
