package server

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/observability"
)

// metricsConfig routes subtract to a calculator.v1 gRPC backend (%[1]s) and bridges the
// demo MCP server (%[2]s), each behind a breaker.
const metricsConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth: {anonymous: {}}
routing:
  grpc:
    - name: calculator
      address: %[1]q
      descriptors: {reflection: true}
      methods:
        subtract: calculator.v1.CalculatorService/Subtract
      unwrap: {subtract: result}
  mcp:
    direct_zones: [external]
    servers:
      - name: demo
        http: {url: %[2]q}
breakers:
  default: {}
`

// TestMetricsScrape drives calls of every kind through the HTTP face — a transcoded gRPC
// call, an unknown method, a batch of both, an MCP tool — and a refused reload, then
// scrapes the admin listener's /metrics and checks each series moved by exactly what the
// calls account for.
func TestMetricsScrape(t *testing.T) {
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	ts := start(t, fmt.Sprintf(metricsConfig, addr, demoUpstream(t, demo.MCPOptions{})), nil)
	ts.waitReadyWithin(20 * time.Second)
	before := ts.scrape()

	if _, _, body := ts.post(`{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`); !strings.Contains(body, `"result":19`) {
		t.Fatalf("subtract: %s", body)
	}
	if r := decodeOne(t, mustBody(ts.post(`{"jsonrpc":"2.0","method":"no.such.method","id":2}`))); r.Error == nil || r.Error.Code != -32601 {
		t.Fatalf("unknown method: %+v", r)
	}
	if rs := decodeMany(t, mustBody(ts.post(`[{"jsonrpc":"2.0","method":"subtract","params":[5,3],"id":3},{"jsonrpc":"2.0","method":"nope","id":4}]`))); len(rs) != 2 {
		t.Fatalf("batch: %+v", rs)
	}
	if r := decodeOne(t, mustBody(ts.post(`{"jsonrpc":"2.0","method":"mcp.test_simple_text","params":{},"id":5}`))); r.Error != nil {
		t.Fatalf("MCP tool: %+v", r.Error)
	}
	if err := ts.ReloadFile(t.TempDir() + "/missing.yaml"); err == nil {
		t.Fatal("reloading a missing file succeeded")
	}

	after := ts.scrape()
	deltas := map[string]float64{
		`protocol_requests_total{method="subtract",protocol="http",status="success",version="2.0"}`:                                     2,
		`protocol_requests_total{method="other",protocol="http",status="error",version="2.0"}`:                                          2,
		`protocol_requests_total{method="mcp.test_simple_text",protocol="http",status="success",version="2.0"}`:                         1,
		`protocol_errors_total{error_code="-32601",method="other",protocol="http"}`:                                                     2,
		`protocol_request_duration_seconds_count{method="subtract",protocol="http"}`:                                                    2,
		`protocol_request_duration_seconds_count{method="other",protocol="http"}`:                                                       2,
		`gateway_transcoding_total{method="calculator.v1.CalculatorService.Subtract",source_protocol="jsonrpc",target_protocol="grpc"}`: 2,
		`gateway_transcoding_total{method="calculator.v1.CalculatorService.Subtract",source_protocol="grpc",target_protocol="jsonrpc"}`: 2,
		`gateway_transcoding_duration_seconds_count{source="jsonrpc",target="grpc"}`:                                                    2,
		`gateway_transcoding_duration_seconds_count{source="grpc",target="jsonrpc"}`:                                                    2,
		`mcp_tool_call_duration_seconds_count{server_id="demo",tool_name="test_simple_text"}`:                                           1,
		`gatehouse_config_reloads_total{result="refused"}`:                                                                              1,
	}
	for k, want := range deltas {
		if got := after[k] - before[k]; got != want {
			t.Errorf("%s moved by %v, want %v", k, got, want)
		}
	}
	for k := range after {
		if strings.Contains(k, "no.such.method") || strings.Contains(k, `"nope"`) {
			t.Errorf("a method no route names became a label: %s", k)
		}
	}
	gauges := map[string]float64{
		`circuit_breaker_state{service="calculator"}`:    observability.BreakerClosed,
		`circuit_breaker_state{service="mcp/demo"}`:      observability.BreakerClosed,
		`mcp_connected_servers{transport="http"}`:        1,
		`gatehouse_upstream_starts_total{server="demo"}`: 1,
	}
	for k, want := range gauges {
		if got, ok := after[k]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
		}
	}
}

// TestMetricsOff checks metrics.enabled: false takes the stage out and /metrics answers 404.
func TestMetricsOff(t *testing.T) {
	ts := start(t, baseConfig+"metrics: {enabled: false}\n", nil)
	if ts.metrics != nil {
		t.Fatal("metrics made with metrics.enabled false")
	}
	resp, err := http.Get(ts.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /metrics: %d, want 404", resp.StatusCode)
	}
}

func mustBody(_ int, _ http.Header, body string) string { return body }

// scrape fetches the admin listener's /metrics, without a credential, and flattens it:
// `name{k="v",…}` → value, histograms as name_count and name_sum.
func (ts *testServer) scrape() map[string]float64 {
	ts.t.Helper()
	resp, err := http.Get(ts.admin + "/metrics")
	if err != nil {
		ts.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		ts.t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	return flattenExposition(ts.t, resp.Body)
}

func flattenExposition(t *testing.T, r io.Reader) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("parsing the exposition: %v", err)
	}
	out := make(map[string]float64)
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := make([]string, 0, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			key := func(n string) string { return n + "{" + strings.Join(slices.Clone(labels), ",") + "}" }
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key(name)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key(name)] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key(name+"_count")] = float64(m.GetHistogram().GetSampleCount())
				out[key(name+"_sum")] = m.GetHistogram().GetSampleSum()
			default:
			}
		}
	}
	return out
}

// TestMetricsRateLimitRejections checks a call the rate-limit stage refuses counts once
// under its rule, and the refusal is a protocol error of code 5001 too.
func TestMetricsRateLimitRejections(t *testing.T) {
	ts := start(t, baseConfig+"rate_limits:\n  rules:\n    - {name: sub, match: \"sub*\", rate: 1/h}\n", nil)
	before := ts.scrape()
	for range 3 {
		ts.post(`{"jsonrpc":"2.0","method":"subtract","params":[3,1],"id":1}`)
	}
	after := ts.scrape()
	for k, want := range map[string]float64{
		`gatehouse_rate_limit_rejections_total{rule="sub"}`:                                         2,
		`protocol_errors_total{error_code="5001",method="subtract",protocol="http"}`:                2,
		`protocol_requests_total{method="subtract",protocol="http",status="success",version="2.0"}`: 1,
	} {
		if got := after[k] - before[k]; got != want {
			t.Errorf("%s moved by %v, want %v", k, got, want)
		}
	}
}

// TestMetricsMCPFace checks a tool call through the MCP face counts under protocol "mcp"
// with the session's negotiated MCP version, and the bridge's tool-call histogram moves.
func TestMetricsMCPFace(t *testing.T) {
	ts := startWith(t, faceConfig("127.0.0.1:0", demoUpstream(t, demo.MCPOptions{}), "session_key: "+testSessionKey), Options{})
	waitForTools(t, ts)
	c := streamableClient(t, ts.base+"/mcp") // negotiates 2025-06-18
	before := ts.scrape()
	callSimpleText(t, c)
	after := ts.scrape()
	for k, want := range map[string]float64{
		`protocol_requests_total{method="mcp.test_simple_text",protocol="mcp",status="success",version="2025-06-18"}`: 1,
		`mcp_tool_call_duration_seconds_count{server_id="demo",tool_name="test_simple_text"}`:                         1,
	} {
		if got := after[k] - before[k]; got != want {
			t.Errorf("%s moved by %v, want %v", k, got, want)
		}
	}
}

// TestMetricsTasks checks gatehouse_tasks follows a delegated task: running while it
// runs, suspended once suspended, and no longer counted once it is cancelled.
func TestMetricsTasks(t *testing.T) {
	ts := startConfig(t, mustParse(t, nekteOn), holdTargets())
	g := &nekteGolden{ts: ts}
	stream := g.send(t, httpFace, `{"jsonrpc":"2.0","method":"nekte.delegate","params":{"task":{"id":"m-1","desc":"hold","timeout_ms":60000,"budget":{"max_tokens":500,"detail_level":"full"},"cap":"hold"}},"id":1}`)
	stream.waitFor(t, `"processed":1`)
	wantTasks := func(step string, want map[string]float64) {
		t.Helper()
		got := ts.scrape()
		for _, state := range []string{"pending", "accepted", "running", "suspended"} {
			if k := `gatehouse_tasks{state="` + state + `"}`; got[k] != want[state] {
				t.Errorf("%s: %s = %v, want %v", step, k, got[k], want[state])
			}
		}
	}
	wantTasks("running", map[string]float64{"running": 1})
	if m := result(t, ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.task.suspend","params":{"task_id":"m-1"},"id":2}`)); m["status"] != "suspended" {
		t.Fatalf("suspend: %v", m)
	}
	wantTasks("suspended", map[string]float64{"suspended": 1})
	if m := result(t, ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.task.cancel","params":{"task_id":"m-1"},"id":3}`)); m["status"] != "cancelled" {
		t.Fatalf("cancel: %v", m)
	}
	stream.wait(t)
	wantTasks("cancelled", map[string]float64{})
}
