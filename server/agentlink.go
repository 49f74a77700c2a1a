package server

import (
	"context"
	"net"
	"net/netip"
	"reflect"

	"github.com/gatehouse-dev/gatehouse/configs/loader"
	grpcface "github.com/gatehouse-dev/gatehouse/faces/grpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
)

// The agent link (routing/agentlink) lives as long as the process, like the NEKTE service:
// agents stay connected across reloads. Its hub is built at start when the configuration
// has an agents section and the internal listener, served by the internal face
// (grpcface.Service), and routed in every configuration under agents.namespace
// (routeAgents), whose capability catalog then lists the connected agents' operators.

// startAgents builds the hub of cfg's agents section; none without one.
func (s *Server) startAgents(cfg *Config) error {
	if cfg.Agents == nil {
		return nil
	}
	opts := agentlink.Options{Logger: s.log.With("component", "agentlink"), Now: s.opts.Now, Watch: s.watchAgent,
		Observer: s.metrics}
	if cfg.Blobs != nil { // DataRefs become signed URLs, issued once the boundary is bound
		opts.DataURLs = agentlink.NewBlobURLs(s.BlobRefs, cfg.Agents.AllowExternalDataRefs)
	}
	h, err := agentlink.New(*cfg.Agents, opts)
	if err != nil {
		return err
	}
	s.agents = h
	return nil
}

// closeAgents lets the tasks running on agents finish until ctx ends, then disconnects
// every agent (a task still running fails with AGENT_GONE).
func (s *Server) closeAgents(ctx context.Context) {
	if s.agents != nil {
		_ = s.agents.Drain(ctx)
	}
}

// grpcServices are the services the internal face serves beside its own.
func (s *Server) grpcServices() []grpcface.Service {
	if s.agents == nil {
		return nil
	}
	return []grpcface.Service{s.agents}
}

// routeAgents routes agents.namespace to the hub's target in table; nothing without a hub.
// The hub keeps the agents section it started with: a configuration that changes it is
// logged, and the change takes effect on restart.
func routeAgents(table *routing.Table, cfg *Config, p process) error {
	h := p.agents
	switch {
	case h == nil && cfg.Agents != nil:
		p.log.Warn("the agents section was added after start: the agent link starts with the next restart")
		return nil
	case h == nil:
		return nil
	case cfg.Agents == nil:
		p.log.Warn("the agents section was removed: connected agents keep serving until restart")
	case !reflect.DeepEqual(cfg.Agents.WithDefaults(), h.Config()):
		p.log.Warn("the agents section changed; it takes effect on restart")
	}
	return table.AddPrefix(h.Config().Namespace, h.Target())
}

// validateAgents checks the agents section: its own rules, and that the internal listener
// it is served on is configured.
func (c *Config) validateAgents(doc *loader.Document) loader.ErrorList {
	if c.Agents == nil {
		return nil
	}
	var errs loader.ErrorList
	if c.Server.Internal == nil {
		errs = append(errs, doc.Errorf("agents", "the agent link is served on the internal listener: configure server.internal"))
	}
	if err := c.Agents.Validate(); err != nil {
		for _, e := range unjoin(err) {
			errs = append(errs, doc.Errorf("agents", "%v", e))
		}
	}
	return errs
}

// unjoin returns the errors errors.Join joined in err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// watchAgent follows a connected agent's credential (agentlink.Options.Watch): its expiry
// and the revocation list, as every long-lived connection's.
func (s *Server) watchAgent(p gateway.Principal, end func(error)) func() {
	return s.liveness.Watch(p, end).Stop
}

// agentPeers lets the hub reach the agents of other replicas and serve its own to them
// (routing/agentlink's peer.go) when the state store is shared. It advertises advertise
// (server.internal.advertise), or the address the internal listener is bound to unless
// that is an unspecified IP, which other replicas cannot dial: then this replica's agents
// serve only its own calls, and a warning says so.
func (s *Server) agentPeers(advertise string, maxBytes int) {
	if s.agents == nil || !s.sharedState() {
		return
	}
	if advertise == "" && s.internalLn != nil {
		advertise = reachableAddr(s.internalLn.Addr())
		if advertise == "" {
			s.log.Warn("the internal listener is bound to an unspecified address and server.internal.advertise is not set: "+
				"the agents connected here serve only this replica's calls", "internal", s.internalLn.Addr().String())
		}
	}
	err := s.agents.UsePeers(agentlink.Peers{Advertise: advertise, Store: s.kv,
		Client: agentlink.NewGRPCPeerClient(maxBytes, peerTLS(s.tls.internal))})
	if err != nil {
		s.log.Error("the agents connected here serve only this replica's calls", "err", err)
	}
}

// reachableAddr returns addr as other replicas dial it: "" when it is not a TCP address or
// its IP is unspecified.
func reachableAddr(addr net.Addr) string {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil || ap.Addr().IsUnspecified() {
		return ""
	}
	return ap.String()
}

// agentGauges sets the agent link's gauges: the agents connected and each one's
// outstanding tasks; none without the agent link.
func (s *Server) agentGauges(g *observability.Gauges) {
	if s.agents == nil {
		return
	}
	agents := s.agents.Agents()
	g.AgentsConnected = len(agents)
	g.AgentOutstanding = make(map[string]int, len(agents))
	for _, a := range agents {
		g.AgentOutstanding[a.ID] = a.Outstanding
	}
}

// agentDetail is one connected agent in /readyz's body.
type agentDetail struct {
	ID          string   `json:"id"`
	Version     string   `json:"version"`
	Operators   []string `json:"operators"`
	Outstanding int      `json:"outstanding"`
	Limit       int      `json:"limit"`
}

// agentsDetail is /readyz's informational "agents" member: the agents connected to this
// replica (an empty list when none is); nil without the agent link. Agents never change
// readiness: a gateway without agents still serves every other target, and an agent on
// another replica may serve the calls arriving here.
func (s *Server) agentsDetail() map[string]any {
	if s.agents == nil {
		return nil
	}
	agents := s.agents.Agents()
	list := make([]agentDetail, 0, len(agents))
	for _, a := range agents {
		list = append(list, agentDetail{ID: a.ID, Version: a.Version, Operators: a.Operators, Outstanding: a.Outstanding, Limit: a.Limit})
	}
	return map[string]any{"agents": list}
}
