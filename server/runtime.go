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
	"github.com/gatehouse-dev/gatehouse/routing/a2a"
	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/capability/openrpc"
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
	trace *observability.SharedTracing
	// nekte routes the nekte.* methods of this configuration, with its capability catalog;
	// nil when NEKTE is off.
	nekte *nekte.Route
	// openrpc answers rpc.discover and GET /openrpc.json (openrpc.go).
	openrpc *openrpc.Target
	// pipe is the faces' entry into this configuration (newPipeline), made once the
	// tracer is known.
	pipe *faces.Pipeline
	// policy is the configuration's policy, compiled once: the policy stage and the
	// catalogs' visibility (newVisibility) ask the same engine.
	policy runtimePolicy
	// visibility is what each caller may see of the catalogs under that policy (NEKTE
	// discovery and card, the MCP face's lists), made once per configuration.
	visibility *capability.Visibility

	// live is the process's liveness of long-lived connections (faces.Pipeline.Liveness).
	live *auth.Liveness

	refs      atomic.Int64
	retired   atomic.Bool
	closeOnce sync.Once
}

// process is what every configuration's runtime is built on and what outlives them: the
// server's logger, clock, state store, key ring, revocation list, metrics and NEKTE service.
type process struct {
	log *slog.Logger
	now func() time.Time
	// extra are targets routed beside the configured ones (Options.Targets: tests, embedders).
	extra map[string]gateway.Target
	// nekte is the process's NEKTE service, nil when NEKTE was off at start; it is routed in
	// every configuration with a nekte section, with a capability catalog built from every
	// other target (routeNekte).
	nekte *nekteService
	// kv is the state store: pending approvals, rate-limit buckets, idempotency records.
	kv state.KV
	// ring returns the signing key ring (nil: none), which mints the hops' downstream tokens.
	ring func() *auth.KeyRing
	// rev is the revocation list the authenticator consults.
	rev *auth.Revocations
	// live re-checks long-lived connections' principals against rev and their expiry.
	live *auth.Liveness
	// m are the metrics (nil: off).
	m *observability.Metrics
	// agents is the agent link's hub, routed under agents.namespace (nil: none).
	agents *agentlink.Hub
}

// process returns what the server builds every configuration's runtime on.
func (s *Server) process() process {
	return process{log: s.log, now: s.opts.Now, extra: s.opts.Targets, nekte: s.nekte, kv: s.kv, ring: s.KeyRing,
		rev: s.revocations, live: s.liveness, m: s.metrics, agents: s.agents}
}

// buildRuntime builds a runtime from cfg on the process p, with what validating cfg
// compiled (pre; nil when it was not validated here: then it is compiled now). On a
// reload, prev is the runtime serving: what cfg leaves unchanged is carried over from it
// (carry.go); nil at start.
func buildRuntime(cfg *Config, pre *compiled, p process, prev *runtime) (*runtime, error) {
	log, now, m := p.log, p.now, p.m
	var routes *mcpbackend.RouteBackends
	if mc := cfg.Routing.MCP; mc != nil {
		var err error
		if routes, err = mcpbackend.NewRouteBackends(mc.SamplingBackend, mc.ElicitationBackend); err != nil {
			return nil, err
		}
	}
	// The authenticator is opened first: a configuration whose keys cannot be read (a
	// missing PEM file, a bad JWKS file) is refused, at startup and on reload.
	authn, err := auth.Open(context.Background(), cfg.Auth, auth.Options{Logger: log, Now: now, Revocations: p.rev, OnToken: m.TokenChecked})
	if err != nil {
		return nil, err
	}
	table, err := routing.Build(cfg.Routing, routing.BuildOptions{Logger: log, Now: now,
		MCP: append(routes.Options(), mcpbackend.WithSessionStarted(m.UpstreamStarted), mcpbackend.CarryOver(routing.MCPOf(prev.tableOrNil())),
			mcpbackend.WithStore(p.kv)),
		Demo: func(c routing.DemoConfig) gateway.Target { return demo.NewSpec(c) }, GRPC: prev.tableOrNil().RenewGRPC,
		A2APrevious: prev.tableOrNil().A2A(), A2AObserver: a2aObserver(m)})
	if err != nil {
		return nil, errors.Join(err, authn.Close())
	}
	for method, t := range p.extra {
		if err := table.Add(method, t); err != nil {
			return nil, errors.Join(err, table.Close(), authn.Close())
		}
	}
	if err := routeAgents(table, cfg, p); err != nil { // agentlink.go
		return nil, errors.Join(err, table.Close(), authn.Close())
	}
	if err := routeSessions(table, cfg, prev, log); err != nil { // httpwire.go
		return nil, errors.Join(err, table.Close(), authn.Close())
	}
	pol := policyOf(cfg, pre)
	handler, parts := pipeline(pipelineParams{process: p, cfg: cfg, pol: pol, table: table, prev: prev})
	rt := &runtime{
		live:       p.live,
		cfg:        cfg,
		handler:    handler,
		built:      parts,
		auth:       authn,
		authn:      authn,
		table:      table,
		policy:     pol,
		visibility: newVisibility(pol, table),
		limits:     cfg.JSONRPC.Limits(cfg.Batch),
		log:        log,
		access:     observability.NewAccessLog(cfg.Log, log),
		now:        now,
	}
	if err := rt.routeNekte(p.nekte); err != nil {
		return nil, errors.Join(err, table.Close(), authn.Close())
	}
	if err := rt.routeOpenRPC(); err != nil { // openrpc.go
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

// acquire returns the current runtime with a reference held; the caller must release it.
func (s *Server) acquire() *runtime {
	for {
		rt := s.cur.Load()
		rt.refs.Add(1)
		if s.cur.Load() == rt {
			return rt
		}
		rt.release()
	}
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
		rt.trace.Drop()
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

// newPipeline returns the faces' entry into rt's pipeline (faces.Pipeline).
func newPipeline(rt *runtime) *faces.Pipeline {
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
		Tracer:            rt.trace.CallTracer(),
		Liveness:          rt.live,
	}
}

// Pipeline implements faces.Runtime.
func (rt *runtime) Pipeline() *faces.Pipeline { return rt.pipe }

// Authenticator implements faces.Runtime.
func (rt *runtime) Authenticator() gateway.Authenticator { return rt.auth }

// Release implements faces.Runtime: the last reference to a retired runtime closes it.
func (rt *runtime) Release() { rt.release() }

var _ faces.Runtime = (*runtime)(nil)

// a2aObserver is the observer of the A2A agents' card fetches: the metrics, none without.
func a2aObserver(m *observability.Metrics) a2a.Observer {
	if m == nil {
		return nil
	}
	return m
}
