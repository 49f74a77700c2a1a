package observability_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	"github.com/gatehouse-dev/gatehouse/observability"
)

func TestTracingConfig(t *testing.T) {
	d := observability.TracingConfig{}.WithDefaults()
	if d.Protocol != "grpc" || d.Endpoint != "localhost:4317" || d.MaxQueue != 2048 || d.BatchSize != 512 ||
		d.ExportInterval != 5*time.Second || d.Timeout != 10*time.Second || d.Ratio() != 1 {
		t.Fatalf("defaults %+v", d)
	}
	if h := (observability.TracingConfig{Protocol: "http"}).WithDefaults(); h.Endpoint != "localhost:4318" {
		t.Fatalf("http default endpoint %q", h.Endpoint)
	}
	if b := (observability.TracingConfig{MaxQueue: 100}).WithDefaults(); b.BatchSize != 100 {
		t.Fatalf("batch_size %d over a small queue", b.BatchSize)
	}
	tests := []struct {
		name string
		cfg  observability.TracingConfig
		want string // "" when valid
	}{
		{"empty", observability.TracingConfig{}, ""},
		{"url", observability.TracingConfig{Endpoint: "https://otel.example:4318/v1/traces", Protocol: "http"}, ""},
		{"protocol", observability.TracingConfig{Protocol: "udp"}, "protocol"},
		{"endpoint", observability.TracingConfig{Endpoint: "collector"}, "endpoint"},
		{"url scheme", observability.TracingConfig{Endpoint: "ftp://x:1"}, "endpoint"},
		{"ratio", observability.TracingConfig{SampleRatio: new(1.5)}, "sample_ratio"},
		{"zero ratio", observability.TracingConfig{SampleRatio: new(0.0)}, ""},
		{"batch over queue", observability.TracingConfig{MaxQueue: 10, BatchSize: 20}, "batch_size"},
		{"header", observability.TracingConfig{Headers: map[string]string{"a b": "x"}}, "headers"},
		{"timeout", observability.TracingConfig{Timeout: time.Hour}, "timeout"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	a := observability.TracingConfig{Headers: map[string]string{"k": "v"}}
	if !a.Equal(observability.TracingConfig{Protocol: "grpc", SampleRatio: new(1.0), Headers: map[string]string{"k": "v"}}) {
		t.Error("equal sections (up to defaults) compared unequal")
	}
	if a.Equal(observability.TracingConfig{Headers: map[string]string{"k": "w"}}) || a.Equal(observability.TracingConfig{SampleRatio: new(0.5)}) {
		t.Error("different sections compared equal")
	}
}

// blockingExporter holds every export until released, as a collector that does not answer.
type blockingExporter struct {
	release  chan struct{}
	once     sync.Once
	exported atomic.Int64
}

func (e *blockingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	select {
	case <-e.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	e.exported.Add(int64(len(spans)))
	return nil
}

func (e *blockingExporter) Shutdown(context.Context) error { return nil }

func (e *blockingExporter) open() { e.once.Do(func() { close(e.release) }) }

// TestTracingQueueDrops: with the exporter stuck, ending spans never blocks; what does not
// fit in max_queue (plus the batch being exported) is dropped.
func TestTracingQueueDrops(t *testing.T) {
	exp := &blockingExporter{release: make(chan struct{})}
	tr, err := observability.OpenTracing(observability.TracingConfig{MaxQueue: 8, BatchSize: 2, ExportInterval: time.Millisecond, Timeout: 5 * time.Second},
		observability.TracingOptions{Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Shutdown() }()
	start := time.Now()
	const n = 10000
	for range n {
		_, span := tr.Tracer().Start(context.Background(), "s")
		span.End()
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("ending %d spans with a stuck exporter took %s", n, d)
	}
	exp.open()
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := exp.exported.Load(); got == 0 || got > 8+2 {
		t.Fatalf("exported %d of %d spans; want at most max_queue + batch_size (the rest dropped)", got, n)
	}
}

// failingExporter fails every export.
type failingExporter struct{ calls atomic.Int64 }

func (e *failingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	e.calls.Add(1)
	return errors.New("collector down")
}

func (e *failingExporter) Shutdown(context.Context) error { return nil }

func TestTracingCountsFailedExports(t *testing.T) {
	exp := &failingExporter{}
	tr, err := observability.OpenTracing(observability.TracingConfig{MaxQueue: 8192, ExportInterval: time.Millisecond}, observability.TracingOptions{Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Tracer().Start(context.Background(), "s")
	span.End()
	_ = tr.ForceFlush(context.Background())
	if tr.Failures() != 1 || exp.calls.Load() != 1 {
		t.Fatalf("failures %d, exports %d", tr.Failures(), exp.calls.Load())
	}
	if err := tr.Shutdown(); err != nil {
		t.Fatal(err)
	}
}

// TestTracingSampling: a ratio of 0 samples no new trace, but a caller's sampled trace is
// continued (parent-based); always_sample_errors records everything and exports the
// unsampled spans that end with an error, flagged sampled, and nothing else.
func TestTracingSampling(t *testing.T) {
	sampledParent := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled, Remote: true,
	}))
	for _, errorsToo := range []bool{false, true} {
		exp := tracetest.NewInMemoryExporter()
		tr, err := observability.OpenTracing(observability.TracingConfig{SampleRatio: new(0.0), AlwaysSampleErrors: errorsToo},
			observability.TracingOptions{Exporter: exp, Version: "1.2.3"})
		if err != nil {
			t.Fatal(err)
		}
		_, ok := tr.Tracer().Start(context.Background(), "ok")
		if ok.IsRecording() != errorsToo || ok.SpanContext().IsSampled() {
			t.Fatalf("errorsToo=%v: new trace recording %v sampled %v", errorsToo, ok.IsRecording(), ok.SpanContext().IsSampled())
		}
		ok.End()
		_, failed := tr.Tracer().Start(context.Background(), "failed")
		failed.SetStatus(codes.Error, "boom")
		failed.End()
		_, continued := tr.Tracer().Start(sampledParent, "continued")
		continued.End()
		_ = tr.ForceFlush(context.Background())
		var names []string
		for _, s := range exp.GetSpans() {
			names = append(names, s.Name)
			if !s.SpanContext.IsSampled() {
				t.Errorf("%s exported unsampled", s.Name)
			}
			if s.Resource.String() == "" || !strings.Contains(s.Resource.String(), "service.version=1.2.3") {
				t.Errorf("resource %s", s.Resource)
			}
		}
		want := "continued"
		if errorsToo {
			want = "failed,continued"
		}
		if got := strings.Join(names, ","); got != want {
			t.Errorf("errorsToo=%v: exported %q, want %q", errorsToo, got, want)
		}
		_ = tr.Shutdown()
	}
}

func TestPropagation(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	check := func(name string, ctx context.Context) {
		t.Helper()
		sc := trace.SpanContextFromContext(ctx)
		if !sc.IsRemote() || observability.TraceID(ctx) != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" ||
			sc.TraceState().Get("k") != "v" {
			t.Errorf("%s: %v", name, sc)
		}
	}
	bg := context.Background()
	check("http", observability.ExtractHTTP(bg, http.Header{"Traceparent": {tp}, "Tracestate": {"k=v"}}))
	check("grpc", observability.ExtractGRPC(metadata.NewIncomingContext(bg, metadata.Pairs("traceparent", tp, "tracestate", "k=v"))))
	check("meta", observability.ExtractMeta(bg, map[string]any{"traceparent": tp, "tracestate": "k=v"}))
	check("params", observability.ExtractParams(bg, []byte(`{"a":1,"_meta":{"traceparent":"`+tp+`","tracestate":"k=v"}}`)))
	for name, ctx := range map[string]context.Context{
		"no header":       observability.ExtractHTTP(bg, http.Header{}),
		"malformed":       observability.ExtractHTTP(bg, http.Header{"Traceparent": {"00-xyz"}}),
		"params no meta":  observability.ExtractParams(bg, []byte(`[1,2]`)),
		"params bad meta": observability.ExtractParams(bg, []byte(`{"_meta":"x"}`)),
		"meta number":     observability.ExtractMeta(bg, map[string]any{"traceparent": 1}),
		"grpc none":       observability.ExtractGRPC(bg),
	} {
		if observability.TraceID(ctx) != "" {
			t.Errorf("%s: extracted %s", name, observability.TraceID(ctx))
		}
	}
}

// TestOpenTracingOTLP builds both OTLP exporters without dialling anything.
func TestOpenTracingOTLP(t *testing.T) {
	for _, c := range []observability.TracingConfig{
		{Protocol: "grpc", Endpoint: "127.0.0.1:1", Insecure: true, Headers: map[string]string{"api-key": "x"}, Timeout: 100 * time.Millisecond},
		{Protocol: "http", Endpoint: "http://127.0.0.1:1/v1/traces", Timeout: 100 * time.Millisecond},
	} {
		tr, err := observability.OpenTracing(c, observability.TracingOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, span := tr.Tracer().Start(context.Background(), "s")
		span.End()
		start := time.Now()
		_ = tr.Shutdown()
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s: shutdown took %s", c.Protocol, d)
		}
	}
}

// TestTracingIDs: the provider's trace and span ids are valid and distinct across spans
// started in parallel, roots and children alike.
func TestTracingIDs(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := observability.OpenTracing(observability.TracingConfig{MaxQueue: 8192, ExportInterval: time.Millisecond}, observability.TracingOptions{Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Shutdown() }()
	const workers, roots = 4, 500
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range roots {
				ctx, root := tr.Tracer().Start(context.Background(), "root")
				_, child := tr.Tracer().Start(ctx, "child")
				child.End()
				root.End()
			}
		})
	}
	wg.Wait()
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	traces, ids := map[trace.TraceID]int{}, map[trace.SpanID]bool{}
	for _, s := range spans {
		sc := s.SpanContext
		if !sc.TraceID().IsValid() || !sc.SpanID().IsValid() || ids[sc.SpanID()] {
			t.Fatalf("span %s: trace %s span %s (valid, distinct?)", s.Name, sc.TraceID(), sc.SpanID())
		}
		ids[sc.SpanID()] = true
		traces[sc.TraceID()]++
	}
	if len(spans) != 2*workers*roots || len(traces) != workers*roots {
		t.Fatalf("%d spans in %d traces, want %d in %d", len(spans), len(traces), 2*workers*roots, workers*roots)
	}
	for id, n := range traces {
		if n != 2 {
			t.Fatalf("trace %s holds %d spans, want its root and child", id, n)
		}
	}
}
