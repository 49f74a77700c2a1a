package observability

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
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
// the hop. Off (no section), a call costs a nil check: the faces' CallTracer is nil and no
// span, context value or attribute is made.

// Attribute keys of the gateway's call spans. Caller identity is only ever recorded hashed.
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

// spanBatch is the name of a batch's ingress span.
const spanBatch = "jsonrpc batch"

// Span kind options, made once.
var (
	serverKind   = trace.WithSpanKind(trace.SpanKindServer)
	internalKind = trace.WithSpanKind(trace.SpanKindInternal)
)

// CallTracer starts the spans of the calls the faces receive, with the tracer of one
// configuration's provider. A nil *CallTracer is tracing off: its methods make no span.
type CallTracer struct {
	t trace.Tracer
}

// NewCallTracer returns the call tracer of t; nil when t is nil (tracing off).
func NewCallTracer(t trace.Tracer) *CallTracer {
	if t == nil {
		return nil
	}
	return &CallTracer{t: t}
}

// ExtractHTTP returns r's context carrying the caller's trace context from its headers
// when tracing is on; r's context as it is otherwise.
func (ct *CallTracer) ExtractHTTP(r *http.Request) context.Context {
	if ct == nil {
		return r.Context()
	}
	return ExtractHTTP(r.Context(), r.Header)
}

// StartIngress starts the server span of one exchange (a request or a batch) that arrived
// over proto, as the child of ctx's remote span context when the caller sent one; name is
// its name until the method is known. It returns the span's context, the span and its
// trace id, which the exchange's responses name. Off, it returns ctx, nil and a new trace
// id.
//
//nolint:spancheck // the face ends the span
func (ct *CallTracer) StartIngress(ctx context.Context, proto gateway.Protocol, name string) (context.Context, trace.Span, string) {
	if ct == nil {
		return ctx, nil, NewTraceID()
	}
	ctx, span := ct.t.Start(ctx, name, serverStart(proto)...)
	return ctx, span, span.SpanContext().TraceID().String()
}

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

// StartMessage starts the ingress span, named name, of a message of a long-lived
// connection: its parent is the trace context of a single request's params._meta
// (traceparent, tracestate) when it has one, else the one the connection carried (in ctx).
func (ct *CallTracer) StartMessage(ctx context.Context, proto gateway.Protocol, name string, payload *jsonrpc.Payload,
	derr *jsonrpc.DecodeError) (context.Context, trace.Span, string) {
	if ct != nil && derr == nil && !payload.Batch && payload.Members[0].Err == nil {
		ctx = ExtractParams(ctx, payload.Members[0].Request.Params)
	}
	return ct.StartIngress(ctx, proto, name)
}

// StartAsCaller starts the span of a call made on a caller's behalf: a server span when it
// is the first of its trace in the gateway (MCP face, internal listener without its own
// span), an internal one under the span ctx already has (a capability's call within
// nekte.invoke, a call of the internal listener under its RPC's span). Off, the trace id
// is traceID, or a new one when it is empty.
//
//nolint:spancheck // the caller ends the span
func (ct *CallTracer) StartAsCaller(ctx context.Context, proto gateway.Protocol, traceID, method string) (context.Context, trace.Span, string) {
	if ct == nil {
		if traceID != "" {
			return ctx, nil, traceID
		}
		return ctx, nil, NewTraceID()
	}
	kind := trace.SpanKindServer
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsRemote() {
		kind = trace.SpanKindInternal
	}
	ctx, span := ct.t.Start(ctx, proto.String()+" "+method, trace.WithSpanKind(kind),
		trace.WithAttributes(attrProtocol.String(proto.String())))
	return ctx, span, span.SpanContext().TraceID().String()
}

// CallSpan is the span of one call and whether the call owns it (a batch member's span,
// ended with the call) or shares its exchange's (a single request's ingress span).
type CallSpan struct {
	span  trace.Span
	owned bool
}

// TraceCall gives call c its span: a single request's is its exchange's span ingress,
// renamed "<protocol> <method>"; a batch member's is a child of it so named. ingress is
// put back in ctx, which a face may have replaced with a call context of its own (a
// WebSocket request's, cancellable by the caller). The attributes are set when the call
// ends, all at once (CallSpan.Record).
//
//nolint:spancheck // CallSpan.Record ends the span
func (ct *CallTracer) TraceCall(ctx context.Context, ingress trace.Span, c *gateway.Call, single bool) (context.Context, CallSpan) {
	name := c.Protocol.String() + " " + c.Method
	ctx = trace.ContextWithSpan(ctx, ingress)
	if single || ct == nil {
		ingress.SetName(name)
		return ctx, CallSpan{span: ingress}
	}
	ctx, span := ct.t.Start(ctx, name, internalKind)
	return ctx, CallSpan{span: span, owned: true}
}

// Record notes the call and its outcome (err, nil for success) on its span — who called
// what, the target it reached, its error — and ends the span when the call owns it.
func (t CallSpan) Record(c *gateway.Call, err *gateway.Error) {
	switch {
	case !t.span.IsRecording(): // not sampled: nothing to note
	case err != nil:
		t.span.SetAttributes(callAttributes(c, err)...)
		t.span.SetStatus(codes.Error, err.Message())
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
		attrs = append(attrs, attrCaller.String(spanCallerHash(p.Subject)))
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

// spanCallerHash is the caller's pseudonym in spans: the first 8 bytes of SHA-256 of its
// subject, in hex. It correlates a caller's calls across replicas and restarts without
// exporting who it is; a subject that can be guessed can be confirmed by hashing it.
func spanCallerHash(subject string) string {
	sum := sha256.Sum256([]byte(subject))
	return hex.EncodeToString(sum[:8])
}

// TraceError marks span failed with err's JSON-RPC code and client-safe message; nil-safe.
func TraceError(span trace.Span, err *gateway.Error) {
	if span == nil {
		return
	}
	span.SetAttributes(attrJSONRPCCode.Int(int(err.Code())), attrJSONRPCMessage.String(err.Message()))
	span.SetStatus(codes.Error, err.Message())
}

// TraceBatch renames an exchange's span for the batch it turned out to carry; nil-safe.
func TraceBatch(span trace.Span, members int) {
	if span == nil {
		return
	}
	span.SetName(spanBatch)
	span.SetAttributes(attrBatchSize.Int(members))
}

// EndHTTPSpan ends an HTTP exchange's span. A response status of 400 or more is recorded
// on it, and marks it failed unless a call already did with its code (refusals before any
// call — credentials, media type, body size — have only the status); 200 and 204 are not
// recorded (the span's status says the call succeeded).
func EndHTTPSpan(span trace.Span, status func() int) {
	if st := status(); st >= http.StatusBadRequest {
		span.SetAttributes(attrHTTPStatus.Int(st))
		if ro, ok := span.(sdktrace.ReadOnlySpan); !ok || ro.Status().Code != codes.Error {
			span.SetStatus(codes.Error, http.StatusText(st))
		}
	}
	span.End()
}

// TraceIDOf returns the trace id of ctx's span context — the caller's or the gateway's
// span, when tracing is on — or a new trace id when it has none.
func TraceIDOf(ctx context.Context) string {
	if id := TraceID(ctx); id != "" {
		return id
	}
	return NewTraceID()
}

// WithTraceParentOf returns dst carrying the span context of src as a remote parent (the
// caller's trace context seen on a WebSocket upgrade, for the connection's messages); dst
// itself when src has none.
func WithTraceParentOf(dst, src context.Context) context.Context {
	sc := trace.SpanContextFromContext(src)
	if !sc.IsValid() {
		return dst
	}
	return trace.ContextWithRemoteSpanContext(dst, sc)
}

// StartRPC starts the server span of an RPC fullMethod on the internal listener,
// continuing the trace context of its metadata.
//
//nolint:spancheck // EndRPC ends the span
func (ct *CallTracer) StartRPC(ctx context.Context, fullMethod string) (context.Context, trace.Span) {
	name := strings.TrimPrefix(fullMethod, "/")
	service, method, _ := strings.Cut(name, "/")
	return ct.t.Start(ExtractGRPC(ctx), "grpc "+name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrRPCSystem.String("grpc"), attrRPCService.String(service), attrRPCMethod.String(method)))
}

// EndRPC records an RPC's status code on its span and ends it.
func EndRPC(span trace.Span, err error) {
	st := status.Convert(err)
	span.SetAttributes(attrGRPCStatus.Int(int(st.Code())))
	if err != nil {
		span.SetStatus(codes.Error, st.Message())
	}
	span.End()
}
