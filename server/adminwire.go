package server

import (
	"context"
	"net/http"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/auth/approval"
	"github.com/gatehouse-dev/gatehouse/faces"
	adminface "github.com/gatehouse-dev/gatehouse/faces/admin"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/state"
)

// adminHandler returns the handler of the operator listener: the admin face (faces/admin)
// over the server (adminGateway).
func (s *Server) adminHandler() http.Handler {
	return adminface.New(adminGateway{s}, s.log)
}

// adminGateway is the server as the admin face sees it (adminface.Gateway).
type adminGateway struct{ s *Server }

var (
	_ adminface.Gateway = adminGateway{}
	_ adminface.Runtime = adminRuntime{}
)

// Acquire implements adminface.Gateway.
func (g adminGateway) Acquire() adminface.Runtime {
	return adminRuntime{runtime: g.s.acquire(), kv: g.s.kv, s: g.s}
}

// Serving implements adminface.Gateway.
func (g adminGateway) Serving() bool { return g.s.serving.Load() }

// Draining implements adminface.Gateway.
func (g adminGateway) Draining() bool { return g.s.draining.Load() }

// PingState implements adminface.Gateway: a store that cannot be out of reach (the
// embedded one) always answers.
func (g adminGateway) PingState(ctx context.Context) error {
	p, ok := g.s.kv.(state.Pinger)
	if !ok {
		return nil
	}
	return p.Ping(ctx)
}

// StateBackend implements adminface.Gateway.
func (g adminGateway) StateBackend() string {
	if g.s.stateCfg.Backend == "" {
		return state.BackendEmbedded
	}
	return g.s.stateCfg.Backend
}

// Revocations implements adminface.Gateway.
func (g adminGateway) Revocations() *auth.Revocations { return g.s.revocations }

// KeyRing implements adminface.Gateway.
func (g adminGateway) KeyRing() *auth.KeyRing { return g.s.keyring.Load() }

// Metrics implements adminface.Gateway: nil when metrics are off.
func (g adminGateway) Metrics() http.Handler {
	if g.s.metrics == nil {
		return nil
	}
	return g.s.metrics.Handler()
}

// PprofScope implements adminface.Gateway: the listener's setting, read at start like the
// address (a reload that changes it takes effect on restart).
func (g adminGateway) PprofScope() string {
	if !g.s.listen.Admin.Pprof {
		return ""
	}
	return g.s.listen.Admin.PprofScope
}

// adminRuntime is one configuration as the admin face sees it (adminface.Runtime); the
// faces.Runtime methods are the runtime's own. kv is the process's state store, which
// holds the pending approvals.
type adminRuntime struct {
	*runtime

	kv state.KV
	s  *Server
}

// Health implements adminface.Runtime: each target's health, under server.readiness — or,
// while the gateway starts, under "all" (settling).
func (r adminRuntime) Health(ctx context.Context) adminface.Health {
	return r.s.targetHealth(ctx, r.runtime)
}

// targetHealth is rt's targets' health under server.readiness — or, while the gateway
// starts, under "all" (settling): what /readyz and the gRPC health service answer by.
func (s *Server) targetHealth(ctx context.Context, rt *runtime) faces.TargetHealth {
	h := rt.table.Health(ctx)
	return faces.TargetHealth{Targets: h, All: rt.cfg.Server.Readiness == ReadinessAll || s.settling(h, rt.cfg.Server.Reload.ReadyTimeout),
		Info: s.agentsDetail()} // agentlink.go
}

// TrippedBreakers implements adminface.Runtime.
func (r adminRuntime) TrippedBreakers() []resilience.BreakerState { return r.breakers.Tripped() }

// ApprovalStore implements adminface.Runtime.
func (r adminRuntime) ApprovalStore() approval.Store { return approvalStore(r.kv, r.runtime) }

// ApprovalScope implements adminface.Runtime.
func (r adminRuntime) ApprovalScope() string { return r.cfg.Approvals.AdminScope }

// approvalStore returns the store of rt's pending approvals in kv.
func approvalStore(kv state.KV, rt *runtime) approval.Store {
	return approval.NewStore(kv, rt.cfg.Approvals, rt.now, rt.log)
}
