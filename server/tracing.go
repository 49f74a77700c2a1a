package server

import "github.com/gatehouse-dev/gatehouse/observability"

// tracingFor returns the tracer provider for cfg with a reference held for the caller: the
// current one when cfg's tracing section equals its, a new one when it differs, nil when
// cfg has none (observability.SharedTracing). The span tree every call gets is
// observability's, started by the faces.
func (s *Server) tracingFor(cfg *Config) (*observability.SharedTracing, error) {
	return observability.ShareTracing(s.tracing, cfg.Tracing, observability.TracingOptions{
		Version: buildVersion(), Logger: s.log, Exporter: s.opts.SpanExporter,
	})
}

// swapTracing makes r (holding a reference for the server) the current provider and drops
// the server's reference to the one it replaces.
func (s *Server) swapTracing(r *observability.SharedTracing) {
	old := s.tracing
	s.tracing = r
	old.Drop()
}

// closeTracing flushes and shuts the current provider down, at the end of the process:
// spans still open in calls cut off by the grace period are lost.
func (s *Server) closeTracing() {
	s.reloadMu.Lock() // a reload may be swapping it
	r := s.tracing
	s.tracing = nil
	s.reloadMu.Unlock()
	r.Close()
}
