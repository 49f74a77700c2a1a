package observability

import (
	"sync"
	"sync/atomic"
)

// SharedTracing is a tracer provider shared by the configurations whose tracing sections
// are equal, and by the process while one of them is current. A reload that changes the
// section opens a new provider; the old one is flushed and shut down once the last
// configuration using it is closed — or at the process's end, whichever comes first.
type SharedTracing struct {
	*Tracing
	refs atomic.Int64
	once sync.Once
}

// ShareTracing returns the provider for cfg with a reference held for the caller: cur
// (holding one more reference) when its section equals cfg, a new one opened with opts when
// it differs, nil when cfg is nil (no tracing section).
func ShareTracing(cur *SharedTracing, cfg *TracingConfig, opts TracingOptions) (*SharedTracing, error) {
	if cfg == nil {
		return nil, nil //nolint:nilnil // no section, no provider: callers check for nil
	}
	if cur != nil && cur.Config().Equal(*cfg) {
		return cur.Hold(), nil
	}
	t, err := OpenTracing(*cfg, opts)
	if err != nil {
		return nil, err
	}
	s := &SharedTracing{Tracing: t}
	s.refs.Store(1)
	return s, nil
}

// Hold takes a reference; nil-safe.
func (s *SharedTracing) Hold() *SharedTracing {
	if s != nil {
		s.refs.Add(1)
	}
	return s
}

// Drop releases a reference; the last one shuts the provider down off the caller's path
// (the flush may wait for the collector up to tracing.timeout). nil-safe.
func (s *SharedTracing) Drop() {
	if s != nil && s.refs.Add(-1) == 0 {
		go s.Close()
	}
}

// Close flushes and stops the provider, once; a second caller waits for the first.
// nil-safe.
func (s *SharedTracing) Close() {
	if s != nil {
		s.once.Do(func() { _ = s.Shutdown() })
	}
}

// CallTracer returns the faces' tracer of the provider; nil (tracing off) for a nil s.
func (s *SharedTracing) CallTracer() *CallTracer {
	if s == nil {
		return nil
	}
	return NewCallTracer(s.Tracer())
}

// References returns how many holders the provider has; 0 once the last has dropped it.
func (s *SharedTracing) References() int64 { return s.refs.Load() }
