package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
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

// extractHTTP returns r's context carrying the caller's trace context from its headers
// when the configuration traces; r's context as it is otherwise.
func (rt *runtime) extractHTTP(r *http.Request) context.Context {
	if rt.trace == nil {
		return r.Context()
	}
	return observability.ExtractHTTP(r.Context(), r.Header)
}

// traceIDOf returns the trace id of ctx's span context — the caller's or the gateway's
// span, when tracing is on — or a new trace id when it has none.
func traceIDOf(ctx context.Context) string {
	if id := observability.TraceID(ctx); id != "" {
		return id
	}
	return observability.NewTraceID()
}

// withTraceParentOf returns dst carrying the span context of src as a remote parent (the
// caller's trace context seen on a WebSocket upgrade, for the connection's messages); dst
// itself when src has none.
func withTraceParentOf(dst, src context.Context) context.Context {
	sc := trace.SpanContextFromContext(src)
	if !sc.IsValid() {
		return dst
	}
	return trace.ContextWithRemoteSpanContext(dst, sc)
}

// Attribute keys of the gateway's spans. Caller identity is only ever recorded hashed.
const (
	attrRPCSystem      = attribute.Key("rpc.system")
	attrRPCService     = attribute.Key("rpc.service")
	attrRPCMethod      = attribute.Key("rpc.method")
	attrJSONRPCID      = attribute.Key("rpc.jsonrpc.request_id")
	attrJSONRPCCode    = attribute.Key("rpc.jsonrpc.error_code")
	attrJSONRPCMessage = attribute.Key("rpc.jsonrpc.error_message")
	attrGRPCStatus     = attribute.Key("rpc.grpc.status_code")
	attrHTTPStatus     = attribute.Key("http.response.status_code")
	attrProtocol       = attribute.Key("gatehouse.protocol")
	attrZone           = attribute.Key("gatehouse.zone")
	attrCaller         = attribute.Key("gatehouse.caller.hash")
	attrAnonymous      = attribute.Key("gatehouse.caller.anonymous")
	attrTier           = attribute.Key("gatehouse.caller.tier")
	attrTarget         = attribute.Key("gatehouse.target")
	attrCapability     = attribute.Key("gatehouse.capability")
	attrBatchSize      = attribute.Key("gatehouse.batch.size")
	attrBackend        = attribute.Key("gatehouse.backend")
	attrAttempt        = attribute.Key("gatehouse.retry.attempt")
	attrBreakerState   = attribute.Key("gatehouse.breaker.state")
)

// Span and event names.
const (
	spanBatch          = "jsonrpc batch"
	spanHTTPIngress    = "http POST " + rpcPath
	spanWSIngress      = "websocket message"
	eventRetry         = "gatehouse.retry"
	eventBreakerRefuse = "gatehouse.breaker.rejected"
)

// startIngress starts the server span of one exchange (a request or a batch) that arrived
// over proto, as the child of ctx's remote span context when the caller sent one; name is
// its name until the method is known. It returns the span's context, the span and its
// trace id, which the exchange's responses name. Off, it returns ctx, nil and a new trace
// id.
//
//nolint:spancheck // the face ends the span
func (rt *runtime) startIngress(ctx context.Context, proto gateway.Protocol, name string) (context.Context, trace.Span, string) {
	if rt.trace == nil {
		return ctx, nil, observability.NewTraceID()
	}
	ctx, span := rt.trace.tracer().Start(ctx, name, serverStart(proto)...)
	return ctx, span, span.SpanContext().TraceID().String()
}

// Span kind options, made once.
var (
	serverKind   = trace.WithSpanKind(trace.SpanKindServer)
	internalKind = trace.WithSpanKind(trace.SpanKindInternal)
)

// serverStarts are the start options of an ingress span by protocol: its kind and
// gatehouse.protocol, made once.
var serverStarts = func() (out [gateway.ProtocolStdio + 1][]trace.SpanStartOption) {
	for p := range out {
		out[p] = newServerStart(gateway.Protocol(p))
	}
	return out
}()

func newServerStart(p gateway.Protocol) []trace.SpanStartOption {
	return []trace.SpanStartOption{serverKind, trace.WithAttributes(attrProtocol.String(p.String()))}
}

// serverStart returns the start options of an ingress span of protocol p.
func serverStart(p gateway.Protocol) []trace.SpanStartOption {
	if int(p) < len(serverStarts) {
		return serverStarts[p]
	}
	return newServerStart(p)
}

// startMessage starts the ingress span of a WebSocket message: its parent is the trace
// context of a single request's params._meta (traceparent, tracestate) when it has one,
// else the one the connection's upgrade carried (in ctx).
func (rt *runtime) startMessage(ctx context.Context, payload *jsonrpc.Payload, derr *jsonrpc.DecodeError) (context.Context, trace.Span, string) {
	if rt.trace != nil && derr == nil && !payload.Batch && payload.Members[0].Err == nil {
		ctx = observability.ExtractParams(ctx, payload.Members[0].Request.Params)
	}
	return rt.startIngress(ctx, gateway.ProtocolWebSocket, spanWSIngress)
}

// startAsCaller starts the span of a call made on a caller's behalf (runAsCaller): a
// server span when it is the first of its trace in the gateway (MCP face, internal
// listener without its own span), an internal one under the span ctx already has (a
// capability's call within nekte.invoke, a call of the internal listener under its RPC's
// span). Off, the trace id is who's, or a new one.
//
//nolint:spancheck // runAsCaller ends the span
func (rt *runtime) startAsCaller(ctx context.Context, who asCaller, method string) (context.Context, trace.Span, string) {
	if rt.trace == nil {
		if who.traceID != "" {
			return ctx, nil, who.traceID
		}
		return ctx, nil, observability.NewTraceID()
	}
	kind := trace.SpanKindServer
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsRemote() {
		kind = trace.SpanKindInternal
	}
	ctx, span := rt.trace.tracer().Start(ctx, who.protocol.String()+" "+method, trace.WithSpanKind(kind),
		trace.WithAttributes(attrProtocol.String(who.protocol.String())))
	return ctx, span, span.SpanContext().TraceID().String()
}

// callTrace is the span of one call and whether the call owns it (a batch member's span,
// ended with the call) or shares its exchange's (a single request's ingress span).
type callTrace struct {
	span  trace.Span
	owned bool
}

// traceCall gives call c its span: a single request's is its exchange's span, renamed
// "<protocol> <method>"; a batch member's is a child of the batch's span so named. The
// exchange's span is put back in ctx, which a face may have replaced with a call context
// of its own (a WebSocket request's, cancellable by the caller). The attributes are set
// when the call ends, all at once (callTrace.record).
//
//nolint:spancheck // callTrace.record ends the span
func (rt *runtime) traceCall(ctx context.Context, ex *exchange, c *gateway.Call, single bool) (context.Context, callTrace) {
	name := c.Protocol.String() + " " + c.Method
	ctx = trace.ContextWithSpan(ctx, ex.span)
	if single {
		ex.span.SetName(name)
		return ctx, callTrace{span: ex.span}
	}
	ctx, span := rt.trace.tracer().Start(ctx, name, internalKind)
	return ctx, callTrace{span: span, owned: true}
}

// record notes the call and its outcome on its span — who called what, the target it
// reached, its error — and ends the span when the call owns it.
func (t callTrace) record(c *gateway.Call, out *outcome) {
	switch {
	case !t.span.IsRecording(): // not sampled: nothing to note
	case out.err != nil:
		t.span.SetAttributes(callAttributes(c, out.err)...)
		t.span.SetStatus(codes.Error, out.err.Message())
	default:
		t.span.SetAttributes(callAttributes(c, nil)...)
	}
	if t.owned {
		t.span.End()
	}
}

// callAttributes are the attributes of a call's span, with its error when it failed. The
// JSON-RPC version is always 2.0 and the protocol is in the span's name: neither is an
// attribute.
func callAttributes(c *gateway.Call, err *gateway.Error) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, attrRPCSystem.String("jsonrpc"), attrRPCMethod.String(c.Method), attrZone.String(c.Zone.String()))
	if !c.IsNotification() {
		attrs = append(attrs, attrJSONRPCID.String(c.ID.Raw()))
	}
	if p := c.Principal; p.Anonymous || p.Subject == "" {
		attrs = append(attrs, attrAnonymous.Bool(true))
	} else {
		attrs = append(attrs, attrCaller.String(callerHash(p.Subject)))
	}
	if c.Principal.Tier != "" {
		attrs = append(attrs, attrTier.String(c.Principal.Tier))
	}
	if c.Capability != "" {
		attrs = append(attrs, attrCapability.String(c.Capability))
	}
	if c.Target != nil {
		attrs = append(attrs, attrTarget.String(c.Target.Name()))
	}
	if err != nil {
		attrs = append(attrs, attrJSONRPCCode.Int(int(err.Code())), attrJSONRPCMessage.String(err.Message()))
	}
	return attrs
}

// callerHash is the caller's pseudonym in spans: the first 8 bytes of SHA-256 of its
// subject, in hex. It correlates a caller's calls across replicas and restarts without
// exporting who it is; a subject that can be guessed can be confirmed by hashing it.
func callerHash(subject string) string {
	sum := sha256.Sum256([]byte(subject))
	return hex.EncodeToString(sum[:8])
}

// traceError marks span failed with err's JSON-RPC code and client-safe message; nil-safe.
func traceError(span trace.Span, err *gateway.Error) {
	if span == nil {
		return
	}
	span.SetAttributes(attrJSONRPCCode.Int(int(err.Code())), attrJSONRPCMessage.String(err.Message()))
	span.SetStatus(codes.Error, err.Message())
}

// traceBatch renames an exchange's span for the batch it turned out to carry; nil-safe.
func traceBatch(span trace.Span, members int) {
	if span == nil {
		return
	}
	span.SetName(spanBatch)
	span.SetAttributes(attrBatchSize.Int(members))
}

// endHTTPSpan ends an HTTP exchange's span. A response status of 400 or more is recorded
// on it, and marks it failed unless a call already did with its code (refusals before any
// call — credentials, media type, body size — have only the status); 200 and 204 are not
// recorded (the span's status says the call succeeded).
func endHTTPSpan(span trace.Span, status func() int) {
	if st := status(); st >= http.StatusBadRequest {
		span.SetAttributes(attrHTTPStatus.Int(st))
		if ro, ok := span.(sdktrace.ReadOnlySpan); !ok || ro.Status().Code != codes.Error {
			span.SetStatus(codes.Error, http.StatusText(st))
		}
	}
	span.End()
}

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
					traceError(m.span, gateway.AsError(err))
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
