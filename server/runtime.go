package server

import (
	"context"
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
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
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
	// catalog is the NEKTE capability catalog of this configuration, nil when NEKTE is off;
	// catalogSeen is its version whose problems were logged last.
	catalog     *capability.Registry
	catalogSeen atomic.Pointer[string]
	// pipe is the faces' entry into this configuration (faceruntime.go), made once the
	// tracer is known.
	pipe *faces.Pipeline
	// policy is the configuration's policy, compiled once: the policy stage and the
	// catalogs' visibility (visibility.go) ask the same engine.
	policy runtimePolicy

	refs      atomic.Int64
	retired   atomic.Bool
	closeOnce sync.Once
}

// buildRuntime builds a runtime from cfg, with what validating it compiled (pre; nil when
// it was not validated here: then it is compiled now); extra targets (used by tests and
// embedders) are routed beside the configured ones. The process's NEKTE service, when extra carries it,
// is routed when cfg has a nekte section, with a capability catalog built from every
// other target (routeNekte). kv is the process's state store, which the approval stage
// keeps pending approvals in; ring returns the process's signing key ring (nil: none), which
// mints the downstream tokens of the configuration's hops; rev is the process's revocation
// list, which the authenticator consults; m are the process's metrics (nil: off).
func buildRuntime(cfg *Config, pre *compiled, log *slog.Logger, now func() time.Time, extra map[string]gateway.Target, kv state.KV, ring func() *auth.KeyRing, rev *auth.Revocations,
	m *observability.Metrics) (*runtime, error) {
	svc, extra := splitNekte(extra)
	routes, err := newMCPRoutes(cfg.Routing.MCP)
	if err != nil {
		return nil, err
	}
	// The authenticator is opened first: a configuration whose keys cannot be read (a
	// missing PEM file, a bad JWKS file) is refused, at startup and on reload.
	authn, err := auth.Open(context.Background(), cfg.Auth, auth.Options{Logger: log, Now: now, Revocations: rev, OnToken: m.TokenChecked})
	if err != nil {
		return nil, err
	}
	table, err := routing.Build(cfg.Routing, routing.BuildOptions{Logger: log, Now: now, MCP: append(routes.options(), mcpbackend.WithSessionStarted(m.UpstreamStarted)),
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
	routes.bind(rt) // routed sampling and elicitation methods run in this configuration
	return rt, nil
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
