package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/internal/otelstack"
)

// e2eBackendService is the service.name of the calculator backend's own spans.
const e2eBackendService = "calculator"

// startJaegerBackend serves the calculator with OpenTelemetry's gRPC server instrumentation,
// exporting its spans to Jaeger under a provider of its own, as a separately deployed backend
// would. It returns the backend's address and a flush of its spans.
func startJaegerBackend(t *testing.T, otlp string) (string, func(context.Context) error) {
	t.Helper()
	exporter, err := otlptracegrpc.New(t.Context(), otlptracegrpc.WithEndpoint(otlp), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter, sdktrace.WithBatchTimeout(10*time.Millisecond)),
		sdktrace.WithResource(sdkresource.NewSchemaless(attribute.String("service.name", e2eBackendService))))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	gs := demo.NewCalculatorServer(grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(propagation.TraceContext{}),
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()))))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String(), tp.ForceFlush
}

// TestObservabilityEndToEnd is the proof of issue 8 against a real Jaeger v2 and Prometheus:
// one JSON-RPC batch whose members go to a gRPC backend and to an MCP stdio server yields one
// trace in Jaeger with the whole span tree, parentage crossing the gateway, the backend (its
// own process in production, its own provider here) and the MCP hop; and the counters and
// histograms Prometheus scraped from the admin listener moved.
func TestObservabilityEndToEnd(t *testing.T) {
	jaeger := otelstack.StartJaeger(t)
	backend, flushBackend := startJaegerBackend(t, jaeger.OTLPGRPC)
	fixture := buildMCPFixture(t)
	yaml := fmt.Sprintf(calcConfig, backend) + fmt.Sprintf(`  mcp:
    direct_zones: [external]
    servers:
      - name: fx
        stdio: {command: %q, env: {FIXTURE_NAME: fx, FIXTURE_HOP: "1"}}
tracing: {endpoint: %q, protocol: grpc, insecure: true, export_interval: 10ms}
`, fixture, jaeger.OTLPGRPC)
	ts := start(t, yaml, nil)
	ts.waitReadyWithin(20 * time.Second)
	prom := otelstack.StartPrometheus(t, []string{strings.TrimPrefix(ts.admin, "http://")})

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, h, body := ts.post(`[{"jsonrpc":"2.0","method":"subtract","params":{"minuend":42,"subtrahend":23},"id":1},` +
		`{"jsonrpc":"2.0","method":"mcp.hop","params":{"tag":"e2e"},"id":2}]`)
	if !strings.Contains(body, `"result":19`) {
		t.Fatalf("batch answer: %s", body)
	}
	if err := flushBackend(ctx); err != nil {
		t.Fatal(err)
	}

	traceID := h.Get("X-Trace-Id")
	const rpc = "calculator.v1.CalculatorService/Subtract"
	want := []string{spanBatch, "http subtract", "grpc " + rpc, rpc, "http mcp.hop", "mcp tools/call hop"}
	spans := waitForSpans(ctx, t, jaeger, traceID, want)
	e2eParent(t, spans, "http subtract", spanBatch)
	e2eParent(t, spans, "http mcp.hop", spanBatch)
	e2eParent(t, spans, "grpc "+rpc, "http subtract")
	e2eParent(t, spans, rpc, "grpc "+rpc)
	e2eParent(t, spans, "mcp tools/call hop", "http mcp.hop")
	if s := spans[rpc]; s.Service != e2eBackendService || s.Tags["span.kind"] != "server" {
		t.Errorf("backend span: service %q kind %v, want %s server", s.Service, s.Tags["span.kind"], e2eBackendService)
	}
	if s := spans["mcp tools/call hop"]; s.Service != "gatehouse" || s.Tags["span.kind"] != "client" {
		t.Errorf("MCP client span: service %q kind %v, want gatehouse client", s.Service, s.Tags["span.kind"])
	}
	hopMeta := hopTraceparent(t, body)
	if want := "00-" + traceID + "-" + spans["mcp tools/call hop"].SpanID + "-01"; hopMeta != want {
		t.Errorf("the MCP server saw traceparent %q, want %q", hopMeta, want)
	}

	for _, q := range []string{
		`sum(protocol_requests_total{job="gatehouse", method="subtract", status="success"}) == 1`,
		`sum(protocol_requests_total{job="gatehouse", method="mcp.hop", status="success"}) == 1`,
		`sum(protocol_request_duration_seconds_count{job="gatehouse"}) >= 2`,
		`sum(gateway_transcoding_total{job="gatehouse", target_protocol="grpc"}) >= 1`,
		`sum(mcp_tool_call_duration_seconds_count{job="gatehouse", tool_name="hop"}) == 1`,
	} {
		qctx, qcancel := context.WithTimeout(t.Context(), 15*time.Second)
		samples, err := prom.WaitForSamples(qctx, q)
		qcancel()
		if err != nil {
			all, _ := prom.Query(t.Context(), `{job="gatehouse", __name__=~"protocol_.*|gateway_.*|mcp_.*"}`)
			t.Errorf("%v; scraped: %+v", err, all)
			continue
		}
		t.Logf("%s: %v", q, samples[0].Value)
	}
}

// waitForSpans reads the trace from Jaeger until it holds a span of each wanted name, and
// returns the spans by name; a name held twice fails the test.
func waitForSpans(ctx context.Context, t *testing.T, j *otelstack.Jaeger, traceID string, want []string) map[string]otelstack.Span {
	t.Helper()
	for {
		spans, err := j.WaitForTrace(ctx, traceID, len(want))
		if err != nil {
			t.Fatalf("trace %s: %v (have %+v)", traceID, err, spans)
		}
		byName := make(map[string]otelstack.Span, len(spans))
		for _, s := range spans {
			if _, dup := byName[s.Name]; dup {
				t.Fatalf("trace %s holds %q twice: %+v", traceID, s.Name, spans)
			}
			byName[s.Name] = s
		}
		complete := true
		for _, name := range want {
			_, ok := byName[name]
			complete = complete && ok
		}
		if complete {
			return byName
		}
		select {
		case <-ctx.Done():
			t.Fatalf("trace %s never held all of %q: %+v", traceID, want, spans)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// e2eParent fails the test unless the span named child is the child of the one named parent.
func e2eParent(t *testing.T, spans map[string]otelstack.Span, child, parent string) {
	t.Helper()
	if spans[child].ParentSpanID != spans[parent].SpanID {
		t.Errorf("%q has parent %s, want %q (%s)", child, spans[child].ParentSpanID, parent, spans[parent].SpanID)
	}
}

// hopTraceparent returns the traceparent the MCP fixture's hop tool saw in its request's _meta,
// from the batch answer.
func hopTraceparent(t *testing.T, body string) string {
	t.Helper()
	var answers []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &answers); err != nil {
		t.Fatalf("batch answer %s: %v", body, err)
	}
	for _, a := range answers {
		if a.ID != 2 {
			continue
		}
		var result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		var meta map[string]any
		if err := json.Unmarshal(a.Result, &result); err != nil || len(result.Content) != 1 {
			t.Fatalf("hop answer %s: %v", a.Result, err)
		}
		if err := json.Unmarshal([]byte(result.Content[0].Text), &meta); err != nil {
			t.Fatalf("hop answer %s: %v", result.Content[0].Text, err)
		}
		s, _ := meta["traceparent"].(string)
		return s
	}
	t.Fatalf("no hop answer in %s", body)
	return ""
}
