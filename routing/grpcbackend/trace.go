package grpcbackend

import (
	"context"
	"errors"
	"io"
	"strings"

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

// startSpan starts the client span of an RPC of m when ctx carries a traced call's span;
// otherwise it returns ctx and nil.
func (b *Backend) startSpan(ctx context.Context, m *method) (context.Context, trace.Span) {
	return tracer.Start(ctx, "grpc "+strings.TrimPrefix(m.path, "/"),
		attribute.String("rpc.system", "grpc"),
		attribute.String("rpc.service", string(m.desc.Parent().FullName())),
		attribute.String("rpc.method", string(m.desc.Name())),
		attribute.String("server.address", b.cfg.Address),
		attribute.String("gatehouse.backend", b.cfg.Name))
}

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

// spanStatus records err — a gRPC status, a gateway error or any error — on span.
func spanStatus(span trace.Span, err error) {
	if err == nil || errors.Is(err, io.EOF) {
		span.SetAttributes(attribute.Int("rpc.grpc.status_code", 0))
		return
	}
	if st, ok := status.FromError(err); ok {
		span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(st.Code())))
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
