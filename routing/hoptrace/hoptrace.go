// Package hoptrace starts the client spans of the hops targets make to their backends. A
// call the gateway traces carries its span in its context; each request a target sends
// for it is a client span under that span, made with the span's own provider, so no
// target installs or reads a global one.
package hoptrace

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Tracer starts client spans under one instrumentation scope, caching the tracer of the
// provider it last saw (a process has one provider at a time).
type Tracer struct {
	scope string
	last  atomic.Pointer[providerTracer]
}

type providerTracer struct {
	tp trace.TracerProvider
	t  trace.Tracer
}

// New returns a Tracer of the instrumentation scope scope.
func New(scope string) *Tracer { return &Tracer{scope: scope} }

// Start starts the client span name under ctx's span when ctx carries a traced call's
// span; otherwise it returns ctx and nil.
func (t *Tracer) Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() {
		return ctx, nil
	}
	tp := parent.TracerProvider()
	p := t.last.Load()
	if p == nil || p.tp != tp {
		p = &providerTracer{tp: tp, t: tp.Tracer(t.scope)}
		t.last.Store(p)
	}
	return p.t.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)) //nolint:spancheck // the caller ends it
}
