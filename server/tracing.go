package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
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
)

// Span names.
const (
	spanBatch       = "jsonrpc batch"
	spanHTTPIngress = "http POST " + rpcPath
	spanWSIngress   = "websocket message"
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

// traceUnary is the internal listener's unary interceptor: with tracing on, each RPC of
// the gateway's services is a server span continuing the trace context of its metadata,
// and the calls it runs are its children.
func (s *Server) traceUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	r := s.cur.Load().trace
	if r == nil || !tracedService(info.FullMethod) {
		return handler(ctx, req)
	}
	ctx, span := startRPCSpan(ctx, r, info.FullMethod)
	resp, err := handler(ctx, req)
	endRPCSpan(span, err)
	return resp, err
}

// traceStream is traceUnary for streaming RPCs.
func (s *Server) traceStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	r := s.cur.Load().trace
	if r == nil || !tracedService(info.FullMethod) {
		return handler(srv, ss)
	}
	ctx, span := startRPCSpan(ss.Context(), r, info.FullMethod)
	err := handler(srv, tracedStream{ServerStream: ss, ctx: ctx})
	endRPCSpan(span, err)
	return err
}

// tracedStream is a server stream whose context carries its RPC's span.
type tracedStream struct {
	grpc.ServerStream
	ctx context.Context
}

// Context returns the stream's context with its span.
func (t tracedStream) Context() context.Context { return t.ctx }

// tracedService reports whether the RPC fullMethod is one of the gateway's own services
// (health checks and reflection are not traced).
func tracedService(fullMethod string) bool {
	return !strings.HasPrefix(fullMethod, "/grpc.")
}

// startRPCSpan starts the server span of an RPC on the internal listener.
//
//nolint:spancheck // endRPCSpan ends the span
func startRPCSpan(ctx context.Context, r *tracingRef, fullMethod string) (context.Context, trace.Span) {
	name := strings.TrimPrefix(fullMethod, "/")
	service, method, _ := strings.Cut(name, "/")
	return r.tracer().Start(observability.ExtractGRPC(ctx), "grpc "+name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrRPCSystem.String("grpc"), attrRPCService.String(service), attrRPCMethod.String(method)))
}

// endRPCSpan records an RPC's status code on its span and ends it.
func endRPCSpan(span trace.Span, err error) {
	st := status.Convert(err)
	span.SetAttributes(attrGRPCStatus.Int(int(st.Code())))
	if err != nil {
		span.SetStatus(codes.Error, st.Message())
	}
	span.End()
}
