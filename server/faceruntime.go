package server

import (
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	"github.com/gatehouse-dev/gatehouse/faces/ws"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
)

// newPipeline returns the faces' entry into rt's pipeline (faces.Pipeline).
func newPipeline(rt *runtime) *faces.Pipeline {
	var tracer *observability.CallTracer
	if rt.trace != nil {
		tracer = observability.NewCallTracer(rt.trace.tracer())
	}
	return &faces.Pipeline{
		Handler:           rt.handler,
		Limits:            rt.limits,
		Tiers:             rt.cfg.Batch.Tiers,
		BatchConcurrency:  rt.cfg.Batch.Concurrency,
		MaxBodyBytes:      rt.cfg.JSONRPC.MaxBodyBytes,
		MaxCollectedBytes: rt.cfg.JSONRPC.MaxCollectedBytes,
		Deadline:          rt.cfg.Deadline,
		Now:               rt.now,
		Log:               rt.log,
		Access:            rt.access,
		Tracer:            tracer,
	}
}

// Pipeline implements faces.Runtime.
func (rt *runtime) Pipeline() *faces.Pipeline { return rt.pipe }

// Authenticator implements faces.Runtime.
func (rt *runtime) Authenticator() gateway.Authenticator { return rt.auth }

// Release implements faces.Runtime: the last reference to a retired runtime closes it.
func (rt *runtime) Release() { rt.release() }

var _ faces.Runtime = (*runtime)(nil)

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
