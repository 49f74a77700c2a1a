package observability

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Events the stage decorators add to a call's span.
const (
	// EventRetry is a retry of the call (RetryEvents).
	EventRetry = "gatehouse.retry"
	// EventBreakerRejected is a refusal of the call by its backend's open breaker
	// (BreakerEvents).
	EventBreakerRejected = "gatehouse.breaker.rejected"
)

// Attribute keys of the stage spans and events.
const (
	attrBackend      = attribute.Key("gatehouse.backend")
	attrAttempt      = attribute.Key("gatehouse.retry.attempt")
	attrBreakerState = attribute.Key("gatehouse.breaker.state")
)

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
	t := tp.Tracer(InstrumentationName)
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

// StageSpan wraps stage mw so that the time a call spends in it — from entering the stage
// until it hands the call on, or refuses it — is a span named name under the call's span;
// a refusal marks it failed with the error's code and client-safe message. Off (traced
// false), for a stage not in the chain (mw nil), or for a call whose span is not recorded
// (not sampled), nothing is added.
func StageSpan(traced bool, name string, mw gateway.Middleware) gateway.Middleware {
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
					spanFailed(m.span, gateway.AsError(err))
				}
				m.span.End()
			}
			return res, err
		}
	}
}

// spanFailed marks span failed with err's JSON-RPC code and client-safe message.
func spanFailed(span trace.Span, err *gateway.Error) {
	span.SetAttributes(attrJSONRPCCode.Int(int(err.Code())), attrJSONRPCMessage.String(err.Message()))
	span.SetStatus(codes.Error, err.Message())
}

// attemptsKey is the context key of a call's attempt count in the retry stage.
type attemptsKey struct{}

// attempts counts the attempts the retry stage made of one call.
type attempts struct {
	n    int
	last schemas.Code
}

// RetryEvents wraps the retry stage mw so that every attempt after the first is an event
// (EventRetry) of the call's span, with the attempt's number, the code the previous one
// failed with and the backend (gateway.BackendOf). Off (traced false), for a stage not in
// the chain (mw nil), or for a call whose span is not recorded, nothing is added.
func RetryEvents(traced bool, mw gateway.Middleware) gateway.Middleware {
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
				trace.SpanFromContext(ctx).AddEvent(EventRetry, trace.WithAttributes(
					attrAttempt.Int(a.n), attrJSONRPCCode.Int(int(a.last)), attrBackend.String(gateway.BackendOf(call))))
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

// BreakerEvents wraps the breaker stage mw so that a call its breaker refuses is an event
// (EventBreakerRejected) of the call's span, with the backend (gateway.BackendOf) and the
// breaker's state. Off (traced false), for a stage not in the chain (mw nil), or for a call
// whose span is not recorded, nothing is added.
func BreakerEvents(traced bool, mw gateway.Middleware) gateway.Middleware {
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
				span.AddEvent(EventBreakerRejected, trace.WithAttributes(attrBackend.String(gateway.BackendOf(call)), attrBreakerState.String(state)))
			}
			return res, err
		}
	}
}
