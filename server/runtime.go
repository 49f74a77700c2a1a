package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/state"
)

// runtime is everything built from one configuration. It is immutable once built; requests
// hold a reference to it while they run.
type runtime struct {
	cfg     *Config
	handler gateway.Handler
	// built are the parts of handler read besides calls: the breakers (/readyz, metrics)
	// and the admission control (metrics), nil when their sections are absent.
	built
	auth gateway.Authenticator
	// authn is auth's concrete type, closed with the runtime (it stops JWKS refreshers).
	authn  *auth.Authenticator
	table  *routing.Table
	limits jsonrpc.Limits
	log    *slog.Logger
	// access is the per-call access log (log.access, log.debug_payloads); nil when off.
	access *observability.AccessLog
	now    func() time.Time
	// trace is the tracer provider of the configuration's tracing section, nil when off
	// (tracing.go); the runtime holds a reference to it until it is closed.
	trace *tracingRef
	// nekte routes the nekte.* methods of this configuration, with its capability catalog;
	// nil when NEKTE is off.
	nekte *nekte.Route
	// pipe is the faces' entry into this configuration (faceruntime.go), made once the
	// tracer is known.
	pipe *faces.Pipeline
	// policy is the configuration's policy, compiled once: the policy stage and the
	// catalogs' visibility (newVisibility) ask the same engine.
	policy runtimePolicy

	refs      atomic.Int64
	retired   atomic.Bool
	closeOnce sync.Once
}

// buildRuntime builds a runtime from cfg, with what validating it compiled (pre; nil when
// it was not validated here: then it is compiled now); extra targets (used by tests and
// embedders) are routed beside the configured ones. The process's NEKTE service svc (nil
// when NEKTE was off at start) is routed when cfg has a nekte section, with a capability
// catalog built from every other target (routeNekte). kv is the process's state store,
// which the approval stage keeps pending approvals in; ring returns the process's signing
// key ring (nil: none), which mints the downstream tokens of the configuration's hops; rev
// is the process's revocation list, which the authenticator consults; m are the process's
// metrics (nil: off).
func buildRuntime(cfg *Config, pre *compiled, log *slog.Logger, now func() time.Time, extra map[string]gateway.Target, svc *nekteService, kv state.KV, ring func() *auth.KeyRing, rev *auth.Revocations,
	m *observability.Metrics) (*runtime, error) {
	var routes *mcpbackend.RouteBackends
	if mc := cfg.Routing.MCP; mc != nil {
		var err error
		if routes, err = mcpbackend.NewRouteBackends(mc.SamplingBackend, mc.ElicitationBackend); err != nil {
			return nil, err
		}
	}
	// The authenticator is opened first: a configuration whose keys cannot be read (a
	// missing PEM file, a bad JWKS file) is refused, at startup and on reload.
	authn, err := auth.Open(context.Background(), cfg.Auth, auth.Options{Logger: log, Now: now, Revocations: rev, OnToken: m.TokenChecked})
	if err != nil {
		return nil, err
	}
	table, err := routing.Build(cfg.Routing, routing.BuildOptions{Logger: log, Now: now, MCP: append(routes.Options(), mcpbackend.WithSessionStarted(m.UpstreamStarted)),
		Demo: func(c routing.DemoConfig) gateway.Target { return demo.NewSpec(c) }})
	if err != nil {
		return nil, errors.Join(err, authn.Close())
	}
	for method, t := range extra {
		if err := table.Add(method, t); err != nil {
			return nil, errors.Join(err, table.Close(), authn.Close())
		}
	}
	pol := policyOf(cfg, pre)
	handler, parts := pipeline(pipelineParams{cfg: cfg, pol: pol, table: table, now: now, kv: kv, ring: ring, log: log, m: m})
	rt := &runtime{
		cfg:     cfg,
		handler: handler,
		built:   parts,
		auth:    authn,
		authn:   authn,
		table:   table,
		policy:  pol,
		limits:  jsonrpc.Limits{MaxDepth: cfg.JSONRPC.MaxDepth, MaxStringBytes: cfg.JSONRPC.MaxStringBytes, MaxBatch: cfg.Batch.MaxSize},
		log:     log,
		access:  observability.NewAccessLog(cfg.Log, log),
		now:     now,
	}
	if err := rt.routeNekte(svc); err != nil {
		return nil, errors.Join(err, table.Close(), authn.Close())
	}
	routes.Bind(rt.runForUpstream) // routed sampling and elicitation methods run in this configuration
	return rt, nil
}

// runForUpstream runs a routed sampling or elicitation method through rt's pipeline as an
// internal call by principal, an MCP upstream (mcpbackend.RunFunc).
func (rt *runtime) runForUpstream(ctx context.Context, principal gateway.Principal, method string, params json.RawMessage) (json.RawMessage, error) {
	who := faces.Caller{Principal: principal, Zone: gateway.ZoneInternal, Protocol: gateway.ProtocolMCP}
	out := rt.Pipeline().RunAs(ctx, who, method, params, nil)
	if out.Err != nil {
		return nil, out.Err
	}
	return out.Result, nil
}

// release drops one reference; the last reference to a retired runtime closes it.
func (rt *runtime) release() {
	if rt.refs.Add(-1) == 0 && rt.retired.Load() {
		rt.close()
	}
}

// retire marks the runtime replaced; it closes once no call holds it.
func (rt *runtime) retire() {
	rt.retired.Store(true)
	if rt.refs.Load() == 0 {
		rt.close()
	}
}

// close releases the targets' resources, once.
func (rt *runtime) close() {
	rt.closeOnce.Do(func() {
		if err := rt.table.Close(); err != nil {
			rt.log.Warn("closing targets of the replaced configuration", "err", err)
		}
		if err := rt.authn.Close(); err != nil {
			rt.log.Warn("closing the authenticator of the replaced configuration", "err", err)
		}
		rt.trace.drop()
	})
}

// ready reports each target's readiness, by name; an empty map means all are ready.
func (rt *runtime) ready(ctx context.Context) map[string]string {
	problems := make(map[string]string)
	for _, t := range rt.table.Targets() {
		if r, ok := t.(gateway.Readier); ok {
			if err := r.Ready(ctx); err != nil {
				problems[t.Name()] = err.Error()
			}
		}
	}
	return problems
}
