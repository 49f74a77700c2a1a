package grpcbackend

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/hoptrace"
)

// A call the gateway traces carries its span in its context (the gateway's tracing is
// on). Each RPC it makes to a backend is then a client span under it, "grpc
// <service>/<method>", whose W3C trace context (traceparent, tracestate) the RPC carries in
// its metadata, so the backend's server span is its child. The span is made with the
// provider of the call's span: this package never installs or reads a global one.

// tracer starts the client spans of RPCs.
var tracer = hoptrace.New("github.com/gatehouse-dev/gatehouse/routing/grpcbackend")

// spanKey names the client spans of one method of one backend.
type spanKey struct{ backend, address, path string }

// methodSpans are what the client spans of one method of one backend share, made on the
// method's first traced RPC: their start (name and kind) and their attributes, set when the
// RPC ends — with its status code in the same slice when it succeeded — so that a span's
// attributes are one allocation of the SDK's, not one at the start and another at the end.
type methodSpans struct {
	start *hoptrace.Static
	attrs []attribute.KeyValue // rpc.system, rpc.service, rpc.method, server.address, gatehouse.backend
	ok    []attribute.KeyValue // attrs and rpc.grpc.status_code 0
}

// spanStarts holds each method's methodSpans by spanKey. The keys come from the
// configuration and the backends' descriptors, never from callers, so it is bounded.
var spanStarts sync.Map

// hopSpan is an RPC's client span with what its method's spans share. Its attributes are
// set by spanStatus, or by End for a span ended without (a stream its reader closed early).
type hopSpan struct {
	trace.Span
	m          *methodSpans
	attributed atomic.Bool
}

// setAttributes sets the method's attributes on the span, with the status code 0 when ok.
func (h *hopSpan) setAttributes(ok bool) {
	h.attributed.Store(true)
	if ok {
		h.SetAttributes(h.m.ok...)
		return
	}
	h.SetAttributes(h.m.attrs...)
}

// End implements trace.Span: it sets the method's attributes unless spanStatus did.
func (h *hopSpan) End(opts ...trace.SpanEndOption) {
	if !h.attributed.Load() {
		h.setAttributes(false)
	}
	h.Span.End(opts...)
}

// startSpan starts the client span of an RPC of m when ctx carries a traced call's span;
// otherwise it returns ctx and nil.
func (b *Backend) startSpan(ctx context.Context, m *method) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, nil // no span: no need of its start
	}
	key := spanKey{backend: b.cfg.Name, address: b.cfg.Address, path: m.path}
	v, ok := spanStarts.Load(key)
	if !ok {
		v, _ = spanStarts.LoadOrStore(key, b.newMethodSpans(m))
	}
	ms := v.(*methodSpans)
	ctx, span := tracer.StartStatic(ctx, ms.start)
	if span == nil {
		return ctx, nil
	}
	return ctx, &hopSpan{Span: span, m: ms}
}

// newMethodSpans makes the methodSpans of m.
func (b *Backend) newMethodSpans(m *method) *methodSpans {
	attrs := []attribute.KeyValue{
		attribute.String("rpc.system", "grpc"),
		attribute.String("rpc.service", string(m.desc.Parent().FullName())),
		attribute.String("rpc.method", string(m.desc.Name())),
		attribute.String("server.address", b.cfg.Address),
		attribute.String("gatehouse.backend", b.cfg.Name),
	}
	return &methodSpans{
		start: hoptrace.NewStatic("grpc " + strings.TrimPrefix(m.path, "/")),
		attrs: attrs,
		ok:    append(slices.Clip(attrs), grpcStatusKey.Int(0)),
	}
}

// grpcStatusKey is the attribute of a finished RPC's status code.
const grpcStatusKey = attribute.Key("rpc.grpc.status_code")

// endSpan records how the RPC ended on its span (*err: nil for OK) and ends it; nil-safe.
func endSpan(span trace.Span, err *error) {
	if span == nil {
		return
	}
	spanStatus(span, *err)
	span.End()
}

// endSpanUnlessStreamed is endSpan for a streaming RPC, unless its result *res is a
// stream of responses: the stream's Close ends the span.
func endSpanUnlessStreamed(span trace.Span, res **gateway.Result, err *error) {
	if span == nil || *res != nil && (*res).Stream != nil {
		return
	}
	endSpan(span, err)
}

// spanStatus records err — a gRPC status, a gateway error or any error — on span, with
// the attributes of its method.
func spanStatus(span trace.Span, err error) {
	hs, _ := span.(*hopSpan)
	if err == nil || errors.Is(err, io.EOF) {
		if hs != nil {
			hs.setAttributes(true)
		} else {
			span.SetAttributes(grpcStatusKey.Int(0))
		}
		return
	}
	if hs != nil {
		hs.setAttributes(false)
	}
	if st, ok := status.FromError(err); ok {
		span.SetAttributes(grpcStatusKey.Int(int(st.Code())))
	}
	span.SetStatus(codes.Error, err.Error())
}

// injectTrace puts the W3C trace context of ctx's span in md and reports whether there
// was one to put.
func injectTrace(ctx context.Context, md metadata.MD) bool {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return false
	}
	propagation.TraceContext{}.Inject(ctx, mdCarrier(md))
	return true
}

// mdCarrier is outgoing metadata as a propagation carrier.
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
