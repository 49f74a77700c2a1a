package server

import (
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	"github.com/gatehouse-dev/gatehouse/faces/session"
	"github.com/gatehouse-dev/gatehouse/faces/ws"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/sessionrpc"
)

// The faces see the server through interfaces of their own (faces.Runtime and its
// extensions); these adapters give the boundary's faces — JSON-RPC over HTTP and over
// WebSocket — the runtime they declare.

// httpGateway is the server as the JSON-RPC face over HTTP sees it.
type httpGateway struct{ *Server }

// Acquire implements httprpc.Gateway.
func (g httpGateway) Acquire() httprpc.Runtime { return g.acquire() }

// JWKS implements httprpc.Gateway.
func (g httpGateway) JWKS() []byte { return g.jwks() }

// wsGateway is the server as the WebSocket face sees it.
type wsGateway struct{ *Server }

// Acquire implements ws.Gateway.
func (g wsGateway) Acquire() ws.Runtime { return g.acquire() }

// Draining implements ws.Gateway.
func (g wsGateway) Draining() bool { return g.draining.Load() }

// sessionGateway is the server as the session face sees it.
type sessionGateway struct{ *Server }

// Acquire implements session.Gateway.
func (g sessionGateway) Acquire() session.Runtime { return g.acquire() }

// Draining implements session.Gateway.
func (g sessionGateway) Draining() bool { return g.draining.Load() }

// routeSessions adds the targets of cfg's session routes to table (routing/sessionrpc);
// on a reload, the upstream commands prev runs unchanged are shared with it.
func routeSessions(table *routing.Table, cfg *Config, prev *runtime, log *slog.Logger) error {
	if cfg.Session == nil {
		return nil
	}
	var previous []gateway.Target
	if pt := prev.tableOrNil(); pt != nil {
		previous = pt.Targets()
	}
	targets, err := sessionrpc.Build(cfg.Session.Routes, sessionrpc.BuildOptions{Logger: log, Previous: previous, Lookup: table.Lookup})
	if err != nil {
		return err
	}
	var errs []error
	for method, t := range targets {
		if err := table.Add(method, t); err != nil { // the table closes what it holds; this one it does not
			errs = append(errs, err, t.(gateway.Closer).Close())
		}
	}
	return errors.Join(errs...)
}

// Session implements session.Runtime.
func (rt *runtime) Session() *session.Config { return rt.cfg.Session }

// HTTP implements httprpc.Runtime.
func (rt *runtime) HTTP() httprpc.Settings {
	return httprpc.Settings{SSE: rt.cfg.SSE, WriteTimeout: rt.cfg.Server.Boundary.WriteTimeout,
		RateLimits: rt.cfg.RateLimits != nil, Idempotency: rt.cfg.Idempotency != nil}
}

// AgentCard implements httprpc.Runtime.
func (rt *runtime) AgentCard() httprpc.CardProvider {
	if p := rt.agentCard(); p != nil {
		return p
	}
	return nil
}

// WebSocket implements ws.Runtime.
func (rt *runtime) WebSocket() *ws.Config { return rt.cfg.WebSocket }

// agentCardProvider is implemented by the target that serves the nekte.* methods
// (routing/nekte): it writes the agent card, JSON, for the endpoint the request was
// addressed to. A provider configured with an endpoint of its own (behind a proxy that
// terminates TLS or rewrites paths) announces that one instead.
type agentCardProvider interface {
	AgentCard(endpoint string) ([]byte, error)
}

// agentCard returns the provider of the agent card of this configuration: the target
// nekte.discover is routed to, when it provides one; nil when NEKTE is not configured.
func (rt *runtime) agentCard() agentCardProvider {
	t, ok := rt.table.Lookup(nekte.MethodDiscover)
	if !ok {
		return nil
	}
	p, _ := t.(agentCardProvider)
	return p
}

// jwks returns the JSON Web Key Set document {"keys": [...]}.
func (s *Server) jwks() []byte {
	keys := []json.RawMessage{}
	if s.nekte != nil {
		keys = append(keys, s.nekte.svc.ReceiptKey())
	}
	keys = append(keys, s.keyRingKeys()...)
	body, _ := json.Marshal(struct {
		Keys []json.RawMessage `json:"keys"`
	}{keys}) // raw JWKs and a slice of them always marshal
	return body
}
