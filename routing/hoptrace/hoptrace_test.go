package hoptrace_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/routing/hoptrace"
)

// TestStart: Start and StartStatic make a client span under ctx's span, with the provider
// of that span, the name and the attributes given; without a span in ctx they make none.
func TestStart(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := hoptrace.New("test/scope")
	static := hoptrace.NewStatic("grpc svc/M", attribute.String("rpc.system", "grpc"), attribute.String("rpc.method", "M"))
	if static.Name() != "grpc svc/M" {
		t.Fatalf("Name() = %q", static.Name())
	}

	tests := []struct {
		name  string
		start func(context.Context) (context.Context, trace.Span)
		want  string
		attrs int
	}{
		{"Start", func(ctx context.Context) (context.Context, trace.Span) {
			return tr.Start(ctx, "mcp tools/call", attribute.String("mcp.method.name", "tools/call"))
		}, "mcp tools/call", 1},
		{"StartStatic", func(ctx context.Context) (context.Context, trace.Span) { return tr.StartStatic(ctx, static) }, "grpc svc/M", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ctx, span := tt.start(context.Background()); span != nil || ctx != context.Background() {
				t.Fatal("a span was started without a call's span")
			}
			exp.Reset()
			parentCtx, parent := tp.Tracer("gateway").Start(context.Background(), "call")
			ctx, span := tt.start(parentCtx)
			if trace.SpanFromContext(ctx) != span {
				t.Error("the span is not in the context returned")
			}
			span.End()
			parent.End()
			spans := exp.GetSpans()
			if len(spans) != 2 {
				t.Fatalf("%d spans", len(spans))
			}
			s := spans[0]
			if s.Name != tt.want || s.SpanKind != trace.SpanKindClient || s.Parent.SpanID() != parent.SpanContext().SpanID() ||
				s.InstrumentationScope.Name != "test/scope" || len(s.Attributes) != tt.attrs {
				t.Fatalf("span %s kind %v parent %s scope %q attributes %v", s.Name, s.SpanKind, s.Parent.SpanID(), s.InstrumentationScope.Name, s.Attributes)
			}
		})
	}
}
