package server

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Tracing (the tracing section) gives every call a tree of spans:
//
//	<protocol> <method>  (server)       the ingress span: one per request, or
//	jsonrpc batch        (server)       one per batch, with a child per member:
//	  <protocol> <method> (internal)
//	    policy, admission  (internal)   time spent in those stages (admission: the queue wait)
//	    grpc <service/method> | mcp <method> [<tool>]  (client, made by the target)
//
// with retries and breaker refusals as events of the call's span. The ingress span
// continues the caller's W3C trace context (headers, gRPC metadata, a message's
// params._meta), and its trace id is the call's trace id (X-Trace-Id, error.data.trace_id).
// The spans travel in the context; the targets inject the context of their client span on
// the hop. Off (no section), a call costs a nil check: runtime.trace is nil and no span,
// context value or attribute is made.

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

// Attribute keys and event names of the stage decorators' span events.
const (
	attrJSONRPCCode    = attribute.Key("rpc.jsonrpc.error_code")
	attrBackend        = attribute.Key("gatehouse.backend")
	attrAttempt        = attribute.Key("gatehouse.retry.attempt")
	attrBreakerState   = attribute.Key("gatehouse.breaker.state")
	eventRetry         = "gatehouse.retry"
	eventBreakerRefuse = "gatehouse.breaker.rejected"
)

// internalKind is the span kind option of a stage's span, made once.
var internalKind = trace.WithSpanKind(trace.SpanKindInternal)

// lastTracer caches the tracer of the provider last seen by tracerOf.
var lastTracer atomic.Pointer[providerTracer]

type providerTracer struct {
	tp trace.TracerProvider
	t  trace.Tracer
}

// tracerOf returns the gateway's tracer of the provider of ctx's span, so that what runs
// below the ingress — stages, targets — traces with the provider the call started with.
func tracerOf(ctx context.Context) trace.Tracer {
	tp := trace.SpanFromContext(ctx).TracerProvider()
	if p := lastTracer.Load(); p != nil && p.tp == tp {
		return p.t
	}
	t := tp.Tracer(observability.InstrumentationName)
	lastTracer.Store(&providerTracer{tp: tp, t: t})
	return t
}

// stageKey is the context key of a stage span, by the stage's name.
type stageKey struct{ name string }

// stageMark is a stage span and the span it is a child of, restored in the context the
// stage hands the call on with, so that what runs below is not inside the stage's span.
type stageMark struct {
	span, parent trace.Span
	passed       atomic.Bool
}

// stageSpan wraps stage mw so that the time a call spends in it — from entering the stage
// until it hands the call on, or refuses it — is a span named name under the call's span.
// Off (traced false), for a stage not in the chain (mw nil), or for a call whose span is
// not recorded (not sampled), nothing is added.
func stageSpan(traced bool, name string, mw gateway.Middleware) gateway.Middleware {
	if !traced || mw == nil {
		return mw
	}
	key := stageKey{name}
	return func(next gateway.Handler) gateway.Handler {
		inner := mw(func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			if m, ok := ctx.Value(key).(*stageMark); ok && m.passed.CompareAndSwap(false, true) {
				m.span.End()
				ctx = trace.ContextWithSpan(ctx, m.parent)
			}
			return next(ctx, call)
		})
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			parent := trace.SpanFromContext(ctx)
			if !parent.IsRecording() {
				return inner(ctx, call)
			}
			m := &stageMark{parent: parent}
			ctx, m.span = tracerOf(ctx).Start(ctx, name, internalKind) //nolint:spancheck // ended when the stage hands on, or below
			res, err := inner(context.WithValue(ctx, key, m), call)
			if m.passed.CompareAndSwap(false, true) { // refused by the stage itself
				if err != nil {
					observability.TraceError(m.span, gateway.AsError(err))
				}
				m.span.End()
			}
			return res, err
		}
	}
}

// attemptsKey is the context key of a call's attempt count in the retry stage.
type attemptsKey struct{}

// attempts counts the attempts the retry stage made of one call.
type attempts struct {
	n    int
	last schemas.Code
}

// retryEvents wraps the retry stage so that every attempt after the first is an event of
// the call's span, with the attempt's number and the code the previous one failed with.
func retryEvents(traced bool, mw gateway.Middleware) gateway.Middleware {
	if !traced || mw == nil {
		return mw
	}
	return func(next gateway.Handler) gateway.Handler {
		inner := mw(func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			a, ok := ctx.Value(attemptsKey{}).(*attempts)
			if !ok {
				return next(ctx, call)
			}
			if a.n++; a.n > 1 {
				trace.SpanFromContext(ctx).AddEvent(eventRetry, trace.WithAttributes(
					attrAttempt.Int(a.n), attrJSONRPCCode.Int(int(a.last)), attrBackend.String(backendOf(call))))
			}
			res, err := next(ctx, call)
			if err != nil {
				a.last = gateway.AsError(err).Code()
			}
			return res, err
		})
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			if !trace.SpanFromContext(ctx).IsRecording() {
				return inner(ctx, call)
			}
			return inner(context.WithValue(ctx, attemptsKey{}, &attempts{}), call)
		}
	}
}

// breakerPassKey is the context key of the flag the breaker stage sets by letting a call
// through.
type breakerPassKey struct{}

// breakerEvents wraps the breaker stage so that a call its breaker refuses is an event of
// the call's span, with the backend and the breaker's state.
func breakerEvents(traced bool, mw gateway.Middleware) gateway.Middleware {
	if !traced || mw == nil {
		return mw
	}
	return func(next gateway.Handler) gateway.Handler {
		inner := mw(func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			if passed, ok := ctx.Value(breakerPassKey{}).(*atomic.Bool); ok {
				passed.Store(true)
			}
			return next(ctx, call)
		})
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			span := trace.SpanFromContext(ctx)
			if !span.IsRecording() {
				return inner(ctx, call)
			}
			passed := new(atomic.Bool)
			res, err := inner(context.WithValue(ctx, breakerPassKey{}, passed), call)
			if err != nil && !passed.Load() {
				state, _ := gateway.AsError(err).Data()["state"].(string)
				span.AddEvent(eventBreakerRefuse, trace.WithAttributes(attrBackend.String(backendOf(call)), attrBreakerState.String(state)))
			}
			return res, err
		}
	}
}
