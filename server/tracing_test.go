package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/internal/chaostest"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// tracedDemo is the demo target with tracing on.
const tracedDemo = baseConfig + "tracing: {export_interval: 10ms}\n"

// A caller's trace context, sampled and not.
const (
	callerTrace    = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan     = "00f067aa0ba902b7"
	callerParent   = "00-" + callerTrace + "-" + callerSpan + "-01"
	callerUnsample = "00-" + callerTrace + "-" + callerSpan + "-00"
)

// startTraced starts yaml (which has a tracing section) with its spans going to an
// in-memory exporter.
func startTraced(t *testing.T, yaml string) (*testServer, *tracetest.InMemoryExporter) {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	exp := tracetest.NewInMemoryExporter()
	return startOptions(t, cfg, Options{SpanExporter: exp}, nil), exp
}

// spansWhen flushes the server's spans until ok holds for what was exported (ingress spans
// end after the response is written), and returns them.
func (ts *testServer) spansWhen(exp *tracetest.InMemoryExporter, ok func(tracetest.SpanStubs) bool) tracetest.SpanStubs {
	ts.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rt := ts.acquire()
		if rt.trace != nil {
			_ = rt.trace.ForceFlush(context.Background())
		}
		rt.release()
		spans := exp.GetSpans()
		if ok(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			ts.t.Fatalf("spans never matched; got:\n%s", describeSpans(spans))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// named returns the spans called name.
func named(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// hasNamed returns a predicate: at least n spans called name.
func hasNamed(name string, n int) func(tracetest.SpanStubs) bool {
	return func(s tracetest.SpanStubs) bool { return len(named(s, name)) >= n }
}

func describeSpans(spans tracetest.SpanStubs) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "  %q kind=%s trace=%s span=%s parent=%s status=%s\n", s.Name, s.SpanKind, s.SpanContext.TraceID(),
			s.SpanContext.SpanID(), s.Parent.SpanID(), s.Status.Code)
	}
	return b.String()
}

// attr returns the value of the attribute key of s, "" when absent.
func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// childOf fails unless child's parent is parent (same trace, parent span id).
func childOf(t *testing.T, child, parent tracetest.SpanStub) {
	t.Helper()
	if child.SpanContext.TraceID() != parent.SpanContext.TraceID() || child.Parent.SpanID() != parent.SpanContext.SpanID() {
		t.Fatalf("%q (trace %s, parent %s) is not a child of %q (trace %s, span %s)", child.Name, child.SpanContext.TraceID(),
			child.Parent.SpanID(), parent.Name, parent.SpanContext.TraceID(), parent.SpanContext.SpanID())
	}
}

// TestTracingOffKeepsTraceIDs: without a tracing section nothing is traced and the trace
// id is the gateway's own, even when the caller sends a traceparent.
func TestTracingOffKeepsTraceIDs(t *testing.T) {
	ts := start(t, baseConfig, nil)
	if ts.cur.Load().trace != nil {
		t.Fatal("tracing is on without a tracing section")
	}
	_, h, body := ts.post(`{"jsonrpc":"2.0","method":"nope","id":1}`, "traceparent", callerParent)
	id := h.Get("X-Trace-Id")
	if len(id) != 32 || id == callerTrace || decodeOne(t, body).Error.Data["trace_id"] != id {
		t.Fatalf("X-Trace-Id %q, body %s", id, body)
	}
}

// TestTracingHTTPSingleCall: a call is one server span named after its protocol and
// method, with the agreed attributes, and X-Trace-Id and error.data.trace_id are its trace
// id; a caller's traceparent is continued (same trace, the caller's span as parent).
func TestTracingHTTPSingleCall(t *testing.T) {
	ts, exp := startTraced(t, tracedDemo)

	_, h, _ := ts.post(`{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":7}`)
	spans := ts.spansWhen(exp, hasNamed("http subtract", 1))
	s := named(spans, "http subtract")[0]
	if h.Get("X-Trace-Id") != s.SpanContext.TraceID().String() {
		t.Fatalf("X-Trace-Id %s, span's trace %s", h.Get("X-Trace-Id"), s.SpanContext.TraceID())
	}
	if s.SpanKind != trace.SpanKindServer || s.Parent.IsValid() || s.Status.Code == codes.Error {
		t.Fatalf("span: %s", describeSpans(spans))
	}
	for k, want := range map[string]string{
		"rpc.system": "jsonrpc", "rpc.method": "subtract", "rpc.jsonrpc.request_id": "7", "gatehouse.protocol": "http",
		"gatehouse.zone": "external", "gatehouse.target": "demo",
		"gatehouse.caller.anonymous": "true",
	} {
		if got := attr(s, k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if got := s.Resource.Attributes(); !containsAttr(got, "service.name", "gatehouse") {
		t.Errorf("resource %v", got)
	}

	exp.Reset()
	_, h, body := ts.post(`{"jsonrpc":"2.0","method":"nope","id":1}`, "traceparent", callerParent)
	spans = ts.spansWhen(exp, hasNamed("http nope", 1))
	s = named(spans, "http nope")[0]
	if s.SpanContext.TraceID().String() != callerTrace || s.Parent.SpanID().String() != callerSpan || !s.Parent.IsRemote() {
		t.Fatalf("caller's trace not continued: %s", describeSpans(spans))
	}
	if h.Get("X-Trace-Id") != callerTrace || decodeOne(t, body).Error.Data["trace_id"] != callerTrace {
		t.Fatalf("X-Trace-Id %q, body %s", h.Get("X-Trace-Id"), body)
	}
	if s.Status.Code != codes.Error || attr(s, "rpc.jsonrpc.error_code") != "-32601" {
		t.Fatalf("error not recorded: %v %v", s.Status, s.Attributes)
	}

	// A caller that did not sample its trace: the call keeps its trace id, nothing is exported.
	exp.Reset()
	_, h, _ = ts.post(`{"jsonrpc":"2.0","method":"subtract","params":[1,1],"id":2}`, "traceparent", callerUnsample)
	if h.Get("X-Trace-Id") != callerTrace {
		t.Fatalf("X-Trace-Id %q", h.Get("X-Trace-Id"))
	}
	_, _, _ = ts.post(`{"jsonrpc":"2.0","method":"subtract","params":[1,1],"id":3}`)
	spans = ts.spansWhen(exp, hasNamed("http subtract", 1))
	if len(spans) != 1 {
		t.Fatalf("the unsampled call was exported: %s", describeSpans(spans))
	}
}

func containsAttr(kvs []attribute.KeyValue, key, value string) bool {
	for _, kv := range kvs {
		if string(kv.Key) == key && kv.Value.String() == value {
			return true
		}
	}
	return false
}

// TestTracingRefusedBeforeDecoding: a request refused before any call (its media type)
// still has its span, failed with the HTTP status, under the id it was answered with.
func TestTracingRefusedBeforeDecoding(t *testing.T) {
	ts, exp := startTraced(t, tracedDemo)
	req, _ := http.NewRequest(http.MethodPost, ts.base+"/rpc", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	spans := ts.spansWhen(exp, hasNamed(spanHTTPIngress, 1))
	s := named(spans, spanHTTPIngress)[0]
	if s.SpanContext.TraceID().String() != resp.Header.Get("X-Trace-Id") || s.Status.Code != codes.Error ||
		attr(s, "http.response.status_code") != "415" {
		t.Fatalf("%s %v", describeSpans(spans), s.Attributes)
	}
}

// TestTracingBatch: a batch is one "jsonrpc batch" server span with one child per member,
// siblings, each named after its member's method.
func TestTracingBatch(t *testing.T) {
	ts, exp := startTraced(t, tracedDemo)
	_, h, _ := ts.post(`[{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1},{"jsonrpc":"2.0","method":"sum","params":[1,2],"id":2}]`)
	spans := ts.spansWhen(exp, func(s tracetest.SpanStubs) bool {
		return len(named(s, spanBatch)) == 1 && len(named(s, "http subtract")) == 1 && len(named(s, "http sum")) == 1
	})
	batch := named(spans, spanBatch)[0]
	if batch.SpanKind != trace.SpanKindServer || attr(batch, "gatehouse.batch.size") != "2" ||
		h.Get("X-Trace-Id") != batch.SpanContext.TraceID().String() {
		t.Fatalf("batch span: %s", describeSpans(spans))
	}
	for _, name := range []string{"http subtract", "http sum"} {
		m := named(spans, name)[0]
		childOf(t, m, batch)
		if m.SpanKind != trace.SpanKindInternal {
			t.Errorf("%s kind %s", name, m.SpanKind)
		}
	}
}

// startTracedBackend serves the calculator with OpenTelemetry's gRPC server instrumentation
// over a tracer provider of its own, as a separately deployed backend would, and returns
// its address and the spans it records.
func startTracedBackend(t *testing.T) (string, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
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
	return ln.Addr().String(), exp
}

// TestTracingGRPCBackend: a call transcoded to a gRPC backend has a client span under its
// ingress span, and the backend's server span (otelgrpc, its own provider) is the client
// span's child: the traceparent went in the metadata.
func TestTracingGRPCBackend(t *testing.T) {
	addr, backend := startTracedBackend(t)
	ts, exp := startTraced(t, fmt.Sprintf(calcConfig, addr)+"tracing: {export_interval: 10ms}\n")
	ts.waitReadyWithin(20 * time.Second)

	_, h, body := ts.post(`{"jsonrpc":"2.0","method":"subtract","params":{"minuend":42,"subtrahend":23},"id":1}`)
	if !strings.Contains(body, `"result":19`) {
		t.Fatal(body)
	}
	const rpc = "calculator.v1.CalculatorService/Subtract"
	spans := ts.spansWhen(exp, func(s tracetest.SpanStubs) bool {
		return len(named(s, "http subtract")) == 1 && len(named(s, "grpc "+rpc)) == 1
	})
	ingress, client := named(spans, "http subtract")[0], named(spans, "grpc "+rpc)[0]
	childOf(t, client, ingress)
	if client.SpanKind != trace.SpanKindClient || attr(client, "rpc.service") != "calculator.v1.CalculatorService" ||
		attr(client, "rpc.method") != "Subtract" || attr(client, "gatehouse.backend") != "calculator" ||
		attr(client, "rpc.grpc.status_code") != "0" {
		t.Fatalf("client span %v", client.Attributes)
	}
	if h.Get("X-Trace-Id") != ingress.SpanContext.TraceID().String() {
		t.Fatalf("X-Trace-Id %s", h.Get("X-Trace-Id"))
	}
	// The backend's server span ends after its response is on the wire, so it may reach
	// the backend's exporter a moment after the gateway's call returned.
	var server []tracetest.SpanStub
	waitFor(t, func() bool {
		server = server[:0]
		for _, s := range backend.GetSpans() {
			if s.Name == rpc {
				server = append(server, s)
			}
		}
		return len(server) >= 1
	})
	if len(server) != 1 {
		t.Fatalf("backend spans:\n%s", describeSpans(backend.GetSpans()))
	}
	childOf(t, server[0], client)
	if !server[0].Parent.IsRemote() || server[0].SpanKind != trace.SpanKindServer {
		t.Fatalf("backend span %s", describeSpans(server))
	}

	// A backend error is recorded on the client span with its gRPC status.
	exp.Reset()
	_, _, body = ts.post(`{"jsonrpc":"2.0","method":"subtract","params":{"minuend":1e308,"subtrahend":-1e308},"id":2}`)
	if !strings.Contains(body, `"error"`) {
		t.Fatal(body)
	}
	spans = ts.spansWhen(exp, hasNamed("http subtract", 1))
	client = named(spans, "grpc "+rpc)[0]
	if client.Status.Code != codes.Error || attr(client, "rpc.grpc.status_code") == "0" {
		t.Fatalf("client span %v %v", client.Status, client.Attributes)
	}
	if s := named(spans, "http subtract")[0]; s.Status.Code != codes.Error || attr(s, "rpc.jsonrpc.error_code") == "" {
		t.Fatalf("ingress span %v %v", s.Status, s.Attributes)
	}
}

// TestTracingInternalGRPC: an RPC on the internal listener continues the trace context of
// its metadata; the call it runs is its child.
func TestTracingInternalGRPC(t *testing.T) {
	addr, _ := startTracedBackend(t)
	ts, exp := startTraced(t, fmt.Sprintf(calcConfig, addr)+"tracing: {export_interval: 10ms}\n")
	ts.waitReadyWithin(20 * time.Second)
	conn, err := grpc.NewClient(ts.InternalAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "traceparent", callerParent)
	if _, err := gatehousev1.NewGatewayServiceClient(conn).Invoke(ctx, &gatehousev1.InvokeRequest{Method: "subtract", Params: []byte(`{"minuend":5,"subtrahend":3}`)}); err != nil {
		t.Fatal(err)
	}
	const rpcSpan = "grpc gatehouse.v1.GatewayService/Invoke"
	spans := ts.spansWhen(exp, func(s tracetest.SpanStubs) bool { return len(named(s, rpcSpan)) == 1 })
	rpc, call := named(spans, rpcSpan)[0], named(spans, "grpc subtract")
	if rpc.SpanContext.TraceID().String() != callerTrace || rpc.Parent.SpanID().String() != callerSpan || len(call) != 1 {
		t.Fatalf("spans:\n%s", describeSpans(spans))
	}
	childOf(t, call[0], rpc)
	if call[0].SpanKind != trace.SpanKindInternal {
		t.Fatalf("call span kind %s", call[0].SpanKind)
	}
	childOf(t, named(spans, "grpc calculator.v1.CalculatorService/Subtract")[0], call[0])
}

// TestTracingWebSocket: messages continue the trace of the upgrade's traceparent, and a
// message's own params._meta.traceparent wins.
func TestTracingWebSocket(t *testing.T) {
	ts, exp := startTraced(t, tracedDemo)
	c := dialWS(t, ts, http.Header{"Traceparent": {callerParent}})
	const other = "0af7651916cd43dd8448eb211c80319c"
	for _, msg := range []string{
		`{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`,
		`{"jsonrpc":"2.0","method":"sum","params":{"_meta":{"traceparent":"00-` + other + `-b7ad6b7169203331-01"}},"id":2}`,
	} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.ReadMessage(); err != nil {
			t.Fatal(err)
		}
	}
	spans := ts.spansWhen(exp, func(s tracetest.SpanStubs) bool {
		return len(named(s, "websocket subtract")) == 1 && len(named(s, "websocket sum")) == 1
	})
	if s := named(spans, "websocket subtract")[0]; s.SpanContext.TraceID().String() != callerTrace || s.Parent.SpanID().String() != callerSpan {
		t.Fatalf("upgrade's trace not continued:\n%s", describeSpans(spans))
	}
	if s := named(spans, "websocket sum")[0]; s.SpanContext.TraceID().String() != other || s.Parent.SpanID().String() != "b7ad6b7169203331" {
		t.Fatalf("message's _meta.traceparent not continued:\n%s", describeSpans(spans))
	}
}

// TestTracingMCPStdio: a tool call to a stdio MCP server is a client span "mcp tools/call
// <tool>" under the call's span, and the server receives its trace context in
// params._meta (the fixture's "hop" tool answers with the _meta it got).
func TestTracingMCPStdio(t *testing.T) {
	bin := buildMCPFixture(t)
	ts, exp := startTraced(t, fmt.Sprintf(`
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth: {anonymous: {}}
log: {level: debug}
routing:
  mcp:
    direct_zones: [external]
    servers:
      - name: fx
        stdio: {command: %q, env: {FIXTURE_NAME: fx, FIXTURE_HOP: "1"}}
mcp_face: {}
tracing: {export_interval: 10ms}
`, bin))
	ts.waitReadyWithin(20 * time.Second)
	_, _, body := ts.post(`{"jsonrpc":"2.0","method":"mcp.hop","params":{"tag":"t"},"id":1}`, "traceparent", callerParent)
	var res struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil || len(res.Result.Content) != 1 {
		t.Fatalf("%s: %v", body, err)
	}
	var meta map[string]any
	if err := json.Unmarshal([]byte(res.Result.Content[0].Text), &meta); err != nil {
		t.Fatal(err)
	}
	spans := ts.spansWhen(exp, func(s tracetest.SpanStubs) bool {
		return len(named(s, "http mcp.hop")) == 1 && len(named(s, "mcp tools/call hop")) == 1
	})
	ingress, client := named(spans, "http mcp.hop")[0], named(spans, "mcp tools/call hop")[0]
	childOf(t, client, ingress)
	if ingress.SpanContext.TraceID().String() != callerTrace {
		t.Fatalf("caller's trace not continued:\n%s", describeSpans(spans))
	}
	want := "00-" + callerTrace + "-" + client.SpanContext.SpanID().String() + "-01"
	if meta["traceparent"] != want {
		t.Fatalf("the server's _meta %v, want traceparent %s", meta, want)
	}
	if client.SpanKind != trace.SpanKindClient || attr(client, "gen_ai.tool.name") != "hop" ||
		attr(client, "gatehouse.backend") != "mcp/fx" || attr(client, "network.transport") != "pipe" {
		t.Fatalf("client span %v", client.Attributes)
	}

	// Through the MCP face, the tool call's params._meta.traceparent is continued.
	const other = "0af7651916cd43dd8448eb211c80319c"
	cli := mcpFaceClient(t, ts)
	req := mcp.CallToolRequest{}
	req.Params.Name = "hop"
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + other + "-b7ad6b7169203331-01"}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := cli.CallTool(ctx, req)
	if err != nil || got.IsError || len(got.Content) != 1 {
		t.Fatalf("%+v %v", got, err)
	}
	text, _ := mcp.AsTextContent(got.Content[0])
	if text == nil || !strings.Contains(text.Text, `"traceparent":"00-`+other+"-") {
		t.Fatalf("the server's _meta: %+v", got.Content[0])
	}
	spans = ts.spansWhen(exp, hasNamed("mcp mcp.hop", 1))
	face := named(spans, "mcp mcp.hop")[0]
	if face.SpanContext.TraceID().String() != other || face.Parent.SpanID().String() != "b7ad6b7169203331" || face.SpanKind != trace.SpanKindServer {
		t.Fatalf("the face's call:\n%s", describeSpans(spans))
	}
}

// TestTracingUnreachableCollector: with a collector that accepts connections and never
// answers (or a closed port) and a tiny queue, no call waits for the exporter — spans that
// do not fit are dropped, never waited for — the failed exports are counted, and the flush
// at shutdown is bounded by the timeout. A call held up by an export would take the whole
// export timeout (2s): that, not the machine's speed, is what the bound below tells apart.
func TestTracingUnreachableCollector(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	silent := chaostest.SilentListener(t)
	const exportTimeout = 2 * time.Second
	for _, tc := range []struct{ name, protocol, endpoint string }{
		{"grpc closed port", "grpc", closed},
		{"http closed port", "http", closed},
		{"grpc silent collector", "grpc", silent},
		{"http silent collector", "http", silent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := start(t, baseConfig+fmt.Sprintf(
				"tracing: {endpoint: %q, protocol: %s, insecure: true, timeout: %s, max_queue: 4, batch_size: 2, export_interval: 5ms}\n",
				tc.endpoint, tc.protocol, exportTimeout), nil)
			begin := time.Now()
			var slowest time.Duration
			for i := range 300 {
				callStart := time.Now()
				if _, _, body := ts.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":"subtract","params":[%d,1],"id":1}`, i)); !strings.Contains(body, "result") {
					t.Fatal(body)
				}
				slowest = max(slowest, time.Since(callStart))
			}
			if slowest >= exportTimeout {
				t.Fatalf("a call took %s, the export timeout: the exporter held it up", slowest)
			}
			took := time.Since(begin)
			rt := ts.acquire()
			tr := rt.trace
			rt.release()
			waitFor(t, func() bool { return tr.Failures() > 0 })
			t.Logf("300 calls in %s (slowest %s); %d failed exports so far", took, slowest, tr.Failures())
			stopped := time.Now()
			if err := ts.stop(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(stopped); d > exportTimeout+3*time.Second {
				t.Fatalf("shutdown took %s", d)
			}
		})
	}
}

// TestTracingReload: a reload that keeps the tracing section keeps the provider; one that
// changes it builds a new one and shuts the old one down; one that drops it turns tracing
// off.
func TestTracingReload(t *testing.T) {
	ts, exp := startTraced(t, tracedDemo)
	first := ts.cur.Load().trace
	reload := func(yaml string) *observability.SharedTracing {
		t.Helper()
		cfg, err := Parse("test.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		if err := ts.Reload(cfg); err != nil {
			t.Fatal(err)
		}
		return ts.cur.Load().trace
	}
	if got := reload(tracedDemo); got != first {
		t.Fatal("an unchanged tracing section rebuilt the provider")
	}
	second := reload(baseConfig + "tracing: {export_interval: 10ms, sample_ratio: 0.5}\n")
	if second == nil || second == first {
		t.Fatal("a changed tracing section kept the provider")
	}
	waitFor(t, func() bool { return first.References() == 0 })
	ts.post(`{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`, "traceparent", callerParent)
	ts.spansWhen(exp, hasNamed("http subtract", 1))
	if reload(baseConfig) != nil {
		t.Fatal("tracing still on without a section")
	}
	if _, h, _ := ts.post(`{"jsonrpc":"2.0","method":"subtract","params":[1,1],"id":1}`, "traceparent", callerParent); h.Get("X-Trace-Id") == callerTrace {
		t.Fatal("tracing off, yet the caller's trace id was used")
	}
}

// TestTracingStagesAndEvents: the policy and admission stages are child spans of the call,
// a retry and a breaker's refusal are events of the call's span, and the caller is
// recorded only as the hash of its subject.
func TestTracingStagesAndEvents(t *testing.T) {
	flaky := &switchTarget{name: "flaky"}
	cfg, err := Parse("test.yaml", []byte(fmt.Sprintf(`
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  api_keys:
    - {name: alice, hash: %q}
policy:
  default: allow
  zones:
    external: {reach: [builtin]}
  rules:
    - {match: {method: flaky.read}, mutation: READ_ONLY}
retries: {backoff: 1ms}
breakers:
  default: {min_requests: 3, failure_ratio: 0.5, window: 10s, open_duration: 10s, half_open_probes: 1}
admission: {}
tracing: {export_interval: 10ms}
`, apiKeyHash("alice-key"))))
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	ts := startOptions(t, cfg, Options{SpanExporter: exp, Targets: map[string]gateway.Target{"flaky.read": flaky}}, nil)
	var traceID string
	call := func() response {
		_, h, body := ts.post(`{"jsonrpc":"2.0","method":"flaky.read","id":1}`, "X-API-Key", "alice-key")
		traceID = h.Get("X-Trace-Id")
		return decodeOne(t, body)
	}
	// callSpan waits for the span of the last call.
	callSpan := func() (tracetest.SpanStub, tracetest.SpanStubs) {
		t.Helper()
		var s tracetest.SpanStub
		spans := ts.spansWhen(exp, func(spans tracetest.SpanStubs) bool {
			for _, sp := range named(spans, "http flaky.read") {
				if sp.SpanContext.TraceID().String() == traceID {
					s = sp
					return true
				}
			}
			return false
		})
		return s, spans
	}

	flaky.set(nil, errFlakyDown.Wrap(errors.New("connection refused")).NotSent())
	if r := call(); r.Error != nil {
		t.Fatalf("retried call failed: %+v", r.Error)
	}
	s, spans := callSpan()
	for _, stage := range []string{"policy", "admission"} {
		st := named(spans, stage)
		if len(st) != 1 {
			t.Fatalf("no %s span:\n%s", stage, describeSpans(spans))
		}
		childOf(t, st[0], s)
		if !st[0].EndTime.Before(s.EndTime) {
			t.Errorf("%s ended with the call", stage)
		}
	}
	if len(s.Events) != 1 || s.Events[0].Name != observability.EventRetry || !containsAttr(s.Events[0].Attributes, "gatehouse.retry.attempt", "2") ||
		!containsAttr(s.Events[0].Attributes, "rpc.jsonrpc.error_code", fmt.Sprint(int(schemas.CodeUnavailable))) {
		t.Fatalf("events %+v", s.Events)
	}
	if attr(s, "gatehouse.caller.hash") != callerHash("alice") || attr(s, "gatehouse.caller.anonymous") != "" {
		t.Fatalf("caller attributes %v", s.Attributes)
	}
	for _, sp := range spans {
		for _, kv := range sp.Attributes {
			if strings.Contains(kv.Value.String(), "alice") {
				t.Fatalf("%s: %s names the caller", sp.Name, kv.Key)
			}
		}
	}

	flaky.set(errFlakyDown, nil)
	for range 3 {
		call()
	}
	if r := call(); r.Error == nil || r.Error.Code != int(schemas.CodeCircuitOpen) {
		t.Fatalf("breaker not open: %+v", r.Error)
	}
	s, spans = callSpan()
	if len(s.Events) != 1 || s.Events[0].Name != observability.EventBreakerRejected || !containsAttr(s.Events[0].Attributes, "gatehouse.backend", "flaky") ||
		!containsAttr(s.Events[0].Attributes, "gatehouse.breaker.state", "open") || s.Status.Code != codes.Error {
		t.Fatalf("span %s events %+v", describeSpans(spans), s.Events)
	}
}

// The span names the wire contract promises (observability's span tree).
const (
	spanBatch       = "jsonrpc batch"
	spanHTTPIngress = "http POST /rpc"
)

// callerHash is the caller's pseudonym in spans: the first 8 bytes of SHA-256 of its
// subject, in hex.
func callerHash(subject string) string {
	sum := sha256.Sum256([]byte(subject))
	return hex.EncodeToString(sum[:8])
}
