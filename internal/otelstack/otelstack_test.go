package otelstack_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/internal/otelstack"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestJaegerTrace exports a parent and a child span over OTLP gRPC and reads them back by trace id.
func TestJaegerTrace(t *testing.T) {
	t.Parallel()
	j := otelstack.StartJaeger(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	exporter, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(j.OTLPGRPC), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(sdkresource.NewSchemaless(attribute.String("service.name", "otelstack-test"))),
	)
	tracer := tp.Tracer("otelstack")
	parentCtx, parent := tracer.Start(ctx, "parent", trace.WithSpanKind(trace.SpanKindServer))
	_, child := tracer.Start(parentCtx, "child", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("rpc.system", "grpc")))
	child.End()
	parent.End()
	if err := tp.Shutdown(ctx); err != nil { // flushes the batch
		t.Fatal(err)
	}

	traceID := parent.SpanContext().TraceID().String()
	spans, err := j.WaitForTrace(ctx, traceID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2: %+v", len(spans), spans)
	}
	byName := map[string]otelstack.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	gotParent, gotChild := byName["parent"], byName["child"]
	if gotParent.SpanID != parent.SpanContext().SpanID().String() || gotParent.ParentSpanID != "" {
		t.Errorf("parent span = %+v, want id %s and no parent", gotParent, parent.SpanContext().SpanID())
	}
	if gotChild.SpanID != child.SpanContext().SpanID().String() || gotChild.ParentSpanID != gotParent.SpanID {
		t.Errorf("child span = %+v, want id %s under %s", gotChild, child.SpanContext().SpanID(), gotParent.SpanID)
	}
	for _, s := range spans {
		if s.TraceID != traceID || s.Service != "otelstack-test" {
			t.Errorf("span %s: trace %s service %q, want trace %s service otelstack-test", s.Name, s.TraceID, s.Service, traceID)
		}
	}
	if got := gotChild.Tags["rpc.system"]; got != "grpc" {
		t.Errorf("child rpc.system = %v, want grpc", got)
	}
	if got := gotChild.Tags["span.kind"]; got != "client" {
		t.Errorf("child span.kind = %v, want client", got)
	}

	_, err = j.Trace(ctx, strings.Repeat("ab", 16))
	if !errors.Is(err, otelstack.ErrTraceNotFound) {
		t.Errorf("Trace of an unknown id: err = %v, want ErrTraceNotFound", err)
	}
}

// TestPrometheusScrape scrapes a counter from a handler of the test and reads it back, then again after it moved.
func TestPrometheusScrape(t *testing.T) {
	t.Parallel()
	registry := prometheus.NewRegistry()
	events := prometheus.NewCounter(prometheus.CounterOpts{Name: "otelstack_test_events_total", Help: "Events of the test."})
	registry.MustRegister(events)
	events.Add(3)
	target := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	t.Cleanup(target.Close)
	host := strings.TrimPrefix(target.URL, "http://")

	p := otelstack.StartPrometheus(t, []string{host})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	samples, err := p.WaitForSamples(ctx, `otelstack_test_events_total == 3`)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 1 || samples[0].Metric["job"] != otelstack.ScrapeJob || samples[0].Metric["instance"] != host {
		t.Fatalf("samples = %+v, want one series of job %s instance %s", samples, otelstack.ScrapeJob, host)
	}
	events.Add(2)
	if _, err := p.WaitForSamples(ctx, `otelstack_test_events_total == 5`); err != nil {
		t.Fatal(err)
	}

	scalar, err := p.Query(ctx, `scalar(otelstack_test_events_total) * 2`)
	if err != nil {
		t.Fatal(err)
	}
	if len(scalar) != 1 || scalar[0].Value != 10 || len(scalar[0].Metric) != 0 {
		t.Errorf("scalar query = %+v, want one unlabelled 10", scalar)
	}
	if _, err := p.Query(ctx, `sum(`); err == nil {
		t.Error("a malformed query returned no error")
	}
}

// TestPrometheusScrapeInterval: a Prometheus started with a 200ms scrape interval holds
// several samples of a series within a second, which the default 1s interval cannot.
func TestPrometheusScrapeInterval(t *testing.T) {
	t.Parallel()
	registry := prometheus.NewRegistry()
	events := prometheus.NewCounter(prometheus.CounterOpts{Name: "otelstack_test_interval_total", Help: "Events of the test."})
	registry.MustRegister(events)
	target := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	t.Cleanup(target.Close)

	p := otelstack.StartPrometheusWith(t, []string{strings.TrimPrefix(target.URL, "http://")},
		otelstack.PrometheusOptions{ScrapeInterval: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := p.WaitForSamples(ctx, `count_over_time(otelstack_test_interval_total[1s]) >= 3`); err != nil {
		t.Fatal(err)
	}
}
