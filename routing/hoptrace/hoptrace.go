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

// clientKind is the span kind option of every hop's span.
var clientKind = trace.WithSpanKind(trace.SpanKindClient)

// Start starts the client span name under ctx's span when ctx carries a traced call's
// span; otherwise it returns ctx and nil.
func (t *Tracer) Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	tr, ok := t.tracer(ctx)
	if !ok {
		return ctx, nil
	}
	return tr.Start(ctx, name, clientKind, trace.WithAttributes(attrs...)) //nolint:spancheck // the caller ends it
}

// Static is the start of the client spans of one kind of request (one backend method):
// their name and the attributes that do not change from one request to the next, made
// once, so that starting a span builds neither.
type Static struct {
	name string
	opts []trace.SpanStartOption
}

// NewStatic returns the start of client spans named name with attrs (none: the caller
// sets the span's attributes itself, e.g. all at once when the request ends).
func NewStatic(name string, attrs ...attribute.KeyValue) *Static {
	opts := []trace.SpanStartOption{clientKind}
	if len(attrs) > 0 {
		opts = append(opts, trace.WithAttributes(attrs...))
	}
	return &Static{name: name, opts: opts}
}

// Name returns the name of the spans s starts.
func (s *Static) Name() string { return s.name }

// StartStatic is Start with the name and attributes of s.
func (t *Tracer) StartStatic(ctx context.Context, s *Static) (context.Context, trace.Span) {
	tr, ok := t.tracer(ctx)
	if !ok {
		return ctx, nil
	}
	return tr.Start(ctx, s.name, s.opts...) //nolint:spancheck // the caller ends it
}

// tracer returns the tracer of the provider of ctx's span, false when ctx carries no
// traced call's span.
func (t *Tracer) tracer(ctx context.Context) (trace.Tracer, bool) {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() {
		return nil, false
	}
	tp := parent.TracerProvider()
	p := t.last.Load()
	if p == nil || p.tp != tp {
		p = &providerTracer{tp: tp, t: tp.Tracer(t.scope)}
		t.last.Store(p)
	}
	return p.t, true
}
