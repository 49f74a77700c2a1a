package server

import (
	a2aface "github.com/gatehouse-dev/gatehouse/faces/a2a"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

// newA2AFace builds the A2A face over the server (a2aGateway); it serves while the
// configuration in force has an a2a section.
func (s *Server) newA2AFace() *a2aface.Face {
	return a2aface.New(a2aGateway{s}, a2aface.Options{State: s.kv, Now: s.opts.Now, Log: s.log, Version: buildVersion(),
		KeyRing: s.keyring.Load, PushOutcome: func(o string) { s.metrics.A2APush(o) }})
}

// a2aGateway is the server as the A2A face sees it (a2aface.Gateway).
type a2aGateway struct{ s *Server }

var (
	_ a2aface.Gateway = a2aGateway{}
	_ a2aface.Runtime = a2aRuntime{}
)

// Acquire implements a2aface.Gateway.
func (g a2aGateway) Acquire() a2aface.Runtime { return a2aRuntime{g.s.acquire()} }

// a2aRuntime is one configuration as the A2A face sees it; the faces.Runtime methods are
// the runtime's own.
type a2aRuntime struct{ *runtime }

// A2A implements a2aface.Runtime.
func (r a2aRuntime) A2A() *a2aface.Config { return r.cfg.A2A }

// Skills implements a2aface.Runtime: the catalog's capabilities the caller may see, as
// nekte.discover shows them (nil: a caller without credentials on the boundary).
func (r a2aRuntime) Skills(p *gateway.Principal) []capability.Capability {
	if r.nekte == nil {
		return nil
	}
	visible := r.visibility.Anonymous()
	if p != nil {
		visible = r.visibility.Visible(*p, gateway.ZoneExternal, gateway.ProtocolHTTP)
	}
	caps := r.nekte.Catalog().Capabilities()
	if visible == nil {
		return caps
	}
	out := caps[:0:0]
	for _, c := range caps {
		if visible(c) {
			out = append(out, c)
		}
	}
	return out
}

// Security implements a2aface.Runtime.
func (r a2aRuntime) Security() a2aface.Security {
	a := r.cfg.Auth
	sec := a2aface.Security{Bearer: a.JWT != nil, Anonymous: a.Anonymous != nil}
	if len(a.APIKeys) > 0 {
		sec.APIKeyHeader = "X-API-Key"
	}
	return sec
}
