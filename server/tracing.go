package server

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/observability"
)

// The tracing section's tracer provider lives as long as the configurations that use it
// (tracingRef); the span tree every call gets is observability's (observability.CallTracer,
// the stage decorators), started by the faces.

// tracingRef is a tracer provider shared by the runtimes whose configurations have equal
// tracing sections, and by the server while it is the current one. A reload that changes
// the section builds a new provider; the old one is flushed and shut down once the last
// runtime using it is closed — or at the server's shutdown, whichever comes first.
type tracingRef struct {
	t    *observability.Tracing
	refs atomic.Int64
	once sync.Once
}

// hold takes a reference; nil-safe.
func (r *tracingRef) hold() *tracingRef {
	if r != nil {
		r.refs.Add(1)
	}
	return r
}

// drop releases a reference; the last one shuts the provider down off the caller's path
// (the flush may wait for the collector up to tracing.timeout). nil-safe.
func (r *tracingRef) drop() {
	if r != nil && r.refs.Add(-1) == 0 {
		go r.shutdown()
	}
}

// shutdown flushes and stops the provider, once; a second caller waits for the first.
func (r *tracingRef) shutdown() {
	r.once.Do(func() { _ = r.t.Shutdown() })
}

// tracer returns the provider's tracer.
func (r *tracingRef) tracer() trace.Tracer { return r.t.Tracer() }

// tracingFor returns the provider for cfg with a reference held for the caller: the
// current one when cfg's section equals its, a new one when it differs, nil when cfg has
// no tracing section.
func (s *Server) tracingFor(cfg *Config) (*tracingRef, error) {
	if cfg.Tracing == nil {
		return nil, nil //nolint:nilnil // no section, no provider: callers check for nil
	}
	if cur := s.tracing; cur != nil && cur.t.Config().Equal(*cfg.Tracing) {
		return cur.hold(), nil
	}
	t, err := observability.OpenTracing(*cfg.Tracing, observability.TracingOptions{
		Version: buildVersion(), Logger: s.log, Exporter: s.opts.SpanExporter,
	})
	if err != nil {
		return nil, err
	}
	r := &tracingRef{t: t}
	r.refs.Store(1)
	return r, nil
}

// swapTracing makes r (holding a reference for the server) the current provider and drops
// the server's reference to the one it replaces.
func (s *Server) swapTracing(r *tracingRef) {
	old := s.tracing
	s.tracing = r
	old.drop()
}

// closeTracing flushes and shuts the current provider down, at the end of the process:
// spans still open in calls cut off by the grace period are lost.
func (s *Server) closeTracing() {
	s.reloadMu.Lock() // a reload may be swapping it
	r := s.tracing
	s.tracing = nil
	s.reloadMu.Unlock()
	if r != nil {
		r.shutdown()
	}
}
