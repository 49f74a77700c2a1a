package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	adminface "github.com/gatehouse-dev/gatehouse/faces/admin"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// The server as the admin face's operator methods and console see it (faces/admin/ops.go).
var _ adminface.Operations = adminGateway{}

// OperatorScope implements adminface.Operations.
func (g adminGateway) OperatorScope() string { return g.s.listen.Admin.OperatorScope }

// Console implements adminface.Operations: read at start, like the listener's address.
func (g adminGateway) Console() adminface.ConsoleConfig {
	return g.s.listen.Admin.Console.WithDefaults()
}

// Window implements adminface.Operations.
func (g adminGateway) Window() *observability.Window { return g.s.metrics.Window() }

// Status implements adminface.Operations.
func (g adminGateway) Status() adminface.Status {
	s := g.s
	rt := s.acquire()
	defer rt.release()
	st := adminface.Status{Version: buildVersion()}
	if since := s.servingSince.Load(); since > 0 {
		st.StartedAt = since / 1e6
	}
	st.Config.File = rt.cfg.File()
	s.reloadMu.Lock()
	if s.lastFile != nil {
		sum := sha256.Sum256(s.lastFile)
		st.Config.Hash = hex.EncodeToString(sum[:])
		st.Config.Version = st.Config.Hash[:12]
	}
	s.reloadMu.Unlock()
	st.Config.LastReload = s.lastReload.Load()
	st.Listeners = append(st.Listeners,
		adminface.Listener{Name: "boundary", Addr: s.BoundaryAddr().String(), TLS: s.tls.boundary != nil,
			ClientCerts: s.listen.Boundary.TLS != nil && s.listen.Boundary.TLS.ClientCAFile != ""},
		adminface.Listener{Name: "admin", Addr: s.AdminAddr().String(), TLS: s.tls.admin != nil,
			ClientCerts: s.listen.Admin.TLS != nil && s.listen.Admin.TLS.ClientCAFile != ""})
	if a := s.InternalAddr(); a != nil {
		st.Listeners = append(st.Listeners, adminface.Listener{Name: "internal", Addr: a.String(), TLS: s.tls.internal != nil,
			ClientCerts: s.listen.Internal != nil && s.listen.Internal.TLS != nil && s.listen.Internal.TLS.ClientCAFile != ""})
	}
	cfg := rt.cfg
	st.Faces = []adminface.FaceStatus{
		{Name: "jsonrpc-http", Enabled: true, Where: "boundary POST /rpc"},
		{Name: "websocket", Enabled: cfg.WebSocket != nil, Where: "boundary GET /ws"},
		{Name: "session", Enabled: cfg.Session != nil, Where: "boundary /session"},
		{Name: "mcp", Enabled: cfg.MCPFace != nil && s.mcp != nil, Where: "boundary /mcp"},
		{Name: "a2a", Enabled: cfg.A2A != nil, Where: "boundary /a2a"},
		{Name: "nekte", Enabled: cfg.Nekte != nil && s.nekte != nil, Where: "boundary nekte.* on /rpc and /ws"},
		{Name: "grpc", Enabled: s.grpc != nil, Where: "internal listener"},
		{Name: "agent link", Enabled: s.agents != nil, Where: "boundary, agents connecting"},
	}
	return st
}

// Backends implements adminface.Operations: every backend the configuration reports the
// health of, has a breaker or an admission queue for, or that had calls in the window, and
// every connected agent.
func (g adminGateway) Backends(ctx context.Context) []adminface.Backend {
	s := g.s
	rt := s.acquire()
	defer rt.release()
	byName := map[string]*adminface.Backend{}
	get := func(name string) *adminface.Backend {
		if b, ok := byName[name]; ok {
			return b
		}
		b := &adminface.Backend{Name: name, Kind: backendKind(rt.cfg, name), Up: true}
		byName[name] = b
		return b
	}
	for name, err := range rt.table.Health(ctx) {
		b := get(name)
		if err != nil {
			b.Up, b.Reason = false, err.Error()
		}
	}
	if rt.breakers != nil {
		for _, st := range rt.breakers.States() {
			b := get(st.Backend)
			b.Breaker, b.RetryAfterMs = st.State, st.RetryAfterMs
			b.Shedding = b.Shedding || st.State == "open"
		}
	}
	if rt.admission != nil {
		lim := rt.cfg.Admission.WithDefaults()
		for name, queued := range rt.admission.QueueDepths() {
			b := get(name)
			b.QueueDepth = queued
			b.Shedding = b.Shedding || queued >= 2*lim.Limits(name).Queue
		}
	}
	for _, se := range s.metrics.Window().Series() {
		get(se.Backend)
	}
	if s.agents != nil {
		for _, a := range s.agents.Agents() {
			b := get("agent/" + a.ID)
			b.Kind, b.QueueDepth = "agent", a.Outstanding
			b.Shedding = a.Limit > 0 && a.Outstanding >= a.Limit
		}
	}
	out := make([]adminface.Backend, 0, len(byName))
	for _, b := range byName {
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b adminface.Backend) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// backendKind names the kind of the backend name in cfg: "mcp" (an MCP server), "grpc" (a
// gRPC backend), "agent" (the agent link) or "builtin".
func backendKind(cfg *Config, name string) string {
	switch {
	case strings.HasPrefix(name, mcpbackend.BackendPrefix):
		return "mcp"
	case slices.ContainsFunc(cfg.Routing.GRPC, func(b grpcbackend.Config) bool { return b.Name == name }):
		return "grpc"
	case strings.HasPrefix(name, "agent"): // the agent link's target, or a connected agent
		return "agent"
	}
	return "builtin"
}

// Catalog implements adminface.Operations: nekte.discover's answer at level, for every
// capability or, with as, those a caller with as's subject and scopes sees on the boundary.
func (g adminGateway) Catalog(level int, as *gateway.Principal) (json.RawMessage, error) {
	rt := g.s.acquire()
	defer rt.release()
	if rt.nekte == nil {
		return nil, gateway.Errorf(schemas.CodeMethodNotFound, "NEKTE is not enabled")
	}
	var o capability.DiscoverOptions
	if as != nil {
		o.Visible = rt.visibility.Visible(*as, gateway.ZoneExternal, gateway.ProtocolHTTP)
	}
	return rt.nekte.Catalog().DiscoverWith(nk.DiscoverParams{Level: level}, o)
}

// Tasks implements adminface.Operations.
func (g adminGateway) Tasks() adminface.OperatorTasks {
	if g.s.nekte == nil {
		return nil
	}
	return g.s.nekte.svc
}

// errNoConfigFile refuses admin.config.reload of a configuration not read from a file.
var errNoConfigFile = errors.New("the configuration was not read from a file: there is nothing to reload")

// ReloadConfig implements adminface.Operations: what SIGHUP does, on the file the
// configuration in force was read from.
func (g adminGateway) ReloadConfig() error {
	rt := g.s.acquire()
	file := rt.cfg.File()
	rt.release()
	if file == "" {
		return errNoConfigFile
	}
	return g.s.ReloadFile(file)
}
