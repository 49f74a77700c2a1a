package observability_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// scrape serves m's exposition and flattens it: `name{k="v",…}` → value, histograms as
// name_count, name_sum and name_bucket{…,le="…"}.
func scrape(t *testing.T, m *observability.Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return parseExposition(t, rec.Body)
}

func parseExposition(t *testing.T, r io.Reader) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("parsing the exposition: %v", err)
	}
	out := make(map[string]float64)
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := labelPairs(m.GetLabel())
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[series(name, labels)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[series(name, labels)] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[series(name+"_count", labels)] = float64(h.GetSampleCount())
				out[series(name+"_sum", labels)] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					le := append(slices.Clone(labels), fmt.Sprintf("le=%q", fmt.Sprint(b.GetUpperBound())))
					out[series(name+"_bucket", le)] = float64(b.GetCumulativeCount())
				}
			default:
			}
		}
	}
	return out
}

func labelPairs(ls []*dto.LabelPair) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	return out
}

func series(name string, labels []string) string {
	sort.Strings(labels)
	return name + "{" + strings.Join(labels, ",") + "}"
}

func TestObserveRequestBoundsLabels(t *testing.T) {
	m := observability.NewMetrics()
	ok := observability.Request{Protocol: "http", Method: "calculator.add", Routed: true, Version: "2.0", Duration: 3 * time.Millisecond}
	m.ObserveRequest(ok)
	m.ObserveRequest(ok)
	m.ObserveRequest(observability.Request{Protocol: "http", Method: "no.such.method", Version: "2.0",
		Err: gateway.NewError(schemas.CodeMethodNotFound), Duration: 50 * time.Microsecond})
	m.ObserveRequest(observability.Request{Protocol: "grpc", Method: "calculator.add", Routed: true,
		Err: gateway.WireError(schemas.Code(123456), "backend's own", nil), Duration: time.Second})
	got := scrape(t, m)
	want := map[string]float64{
		`protocol_requests_total{method="calculator.add",protocol="http",status="success",version="2.0"}`: 2,
		`protocol_requests_total{method="other",protocol="http",status="error",version="2.0"}`:            1,
		`protocol_requests_total{method="calculator.add",protocol="grpc",status="error",version=""}`:      1,
		`protocol_errors_total{error_code="-32601",method="other",protocol="http"}`:                       1,
		`protocol_errors_total{error_code="other",method="calculator.add",protocol="grpc"}`:               1,
		`protocol_request_duration_seconds_count{method="calculator.add",protocol="http"}`:                2,
		`protocol_request_duration_seconds_count{method="other",protocol="http"}`:                         1,
		// 50µs falls in the first bucket, 3ms only from the 5ms one up.
		`protocol_request_duration_seconds_bucket{le="0.0001",method="other",protocol="http"}`:          1,
		`protocol_request_duration_seconds_bucket{le="0.0025",method="calculator.add",protocol="http"}`: 0,
		`protocol_request_duration_seconds_bucket{le="0.005",method="calculator.add",protocol="http"}`:  2,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for k := range got {
		if strings.Contains(k, "no.such.method") {
			t.Errorf("an unrouted method became a label: %s", k)
		}
	}
}

func TestDurationBuckets(t *testing.T) {
	b := observability.DurationBuckets
	if b[0] != 0.0001 || b[len(b)-1] != 10 {
		t.Fatalf("buckets span %v … %v, want 100µs … 10s", b[0], b[len(b)-1])
	}
	if !slices.IsSorted(b) {
		t.Fatalf("buckets not increasing: %v", b)
	}
	subMs := 0
	for _, v := range b {
		if v < 0.001 {
			subMs++
		}
	}
	if subMs < 3 {
		t.Errorf("%d buckets below 1ms, want at least 3 for sub-millisecond resolution", subMs)
	}
	m := observability.NewMetrics()
	m.QueueWaited("calc", 200*time.Microsecond)
	got := scrape(t, m)
	for _, le := range b {
		k := fmt.Sprintf(`gatehouse_queue_wait_seconds_bucket{backend="calc",le=%q}`, fmt.Sprint(le))
		want := 0.0
		if le >= 0.00025 {
			want = 1
		}
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
}

func TestObserverAndCounters(t *testing.T) {
	m := observability.NewMetrics()
	var o gateway.Observer = m
	o.Transcoded("jsonrpc", "grpc", "calculator.v1.Calculator.Add", time.Millisecond)
	closeA := o.StreamOpened("calculator.v1.Calculator", "Count")
	closeB := o.StreamOpened("calculator.v1.Calculator", "Count")
	closeA()
	closeA() // a second report of the same close changes nothing
	o.ToolCalled("echo", "everything", 2*time.Millisecond)
	m.UpstreamStarted("everything")
	m.AdmissionRejected("calc", "queue_full")
	m.RateLimited("default")
	m.Retried("calc")
	m.TokenMinted()
	m.A2APush("delivered")
	m.A2APush("dropped")
	m.A2APush("bogus")
	m.TokenChecked(observability.TokenCached)
	m.TokenChecked("bogus")
	m.ConfigReloaded(true)
	m.ConfigReloaded(false)
	m.ConfigReloaded(false)
	got := scrape(t, m)
	want := map[string]float64{
		`gateway_transcoding_total{method="calculator.v1.Calculator.Add",source_protocol="jsonrpc",target_protocol="grpc"}`: 1,
		`gateway_transcoding_duration_seconds_count{source="jsonrpc",target="grpc"}`:                                        1,
		`grpc_active_streams{method="Count",service="calculator.v1.Calculator"}`:                                            1,
		`mcp_tool_call_duration_seconds_count{server_id="everything",tool_name="echo"}`:                                     1,
		`gatehouse_upstream_starts_total{server="everything"}`:                                                              1,
		`gatehouse_admission_rejections_total{backend="calc",reason="queue_full"}`:                                          1,
		`gatehouse_rate_limit_rejections_total{rule="default"}`:                                                             1,
		`gatehouse_retries_total{backend="calc"}`:                                                                           1,
		`gatehouse_tokens_minted_total{}`:                                                                                   1,
		`gatehouse_a2a_push_deliveries_total{outcome="delivered"}`:                                                          1,
		`gatehouse_a2a_push_deliveries_total{outcome="dropped"}`:                                                            1,
		`gatehouse_a2a_push_deliveries_total{outcome="other"}`:                                                              1,
		`gatehouse_tokens_verified_total{result="cached"}`:                                                                  1,
		`gatehouse_tokens_verified_total{result="other"}`:                                                                   1,
		`gatehouse_config_reloads_total{result="ok"}`:                                                                       1,
		`gatehouse_config_reloads_total{result="refused"}`:                                                                  2,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	closeB()
	if got := scrape(t, m)[`grpc_active_streams{method="Count",service="calculator.v1.Calculator"}`]; got != 0 {
		t.Errorf("grpc_active_streams after both closed = %v, want 0", got)
	}
}

func TestGaugesAtScrape(t *testing.T) {
	m := observability.NewMetrics()
	if got := scrape(t, m); got[`gatehouse_admission_limit{}`] != 0 || hasPrefix(got, "circuit_breaker_state") {
		t.Fatalf("gauges exported before SetGauges: %v", got)
	}
	state := observability.BreakerClosed
	m.SetGauges(func() observability.Gauges {
		return observability.Gauges{
			Breakers:         map[string]int{"calc": state},
			MCPServers:       map[string]int{"stdio": 2},
			QueueDepth:       map[string]int{"calc": 3},
			AdmissionLimit:   -1,
			ApprovalsPending: 4,
		}
	})
	got := scrape(t, m)
	want := map[string]float64{
		`circuit_breaker_state{service="calc"}`:    0,
		`mcp_connected_servers{transport="stdio"}`: 2,
		`gatehouse_queue_depth{backend="calc"}`:    3,
		`gatehouse_approvals_pending{}`:            4,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if _, ok := got[`gatehouse_admission_limit{}`]; ok {
		t.Errorf("gatehouse_admission_limit exported with a negative limit")
	}
	state = observability.BreakerOpen // read anew at every scrape
	if got := scrape(t, m)[`circuit_breaker_state{service="calc"}`]; got != 2 {
		t.Errorf("circuit_breaker_state after opening = %v, want 2", got)
	}
}

func TestNilMetricsDiscard(t *testing.T) {
	var m *observability.Metrics
	m.ObserveRequest(observability.Request{Protocol: "http"})
	m.Transcoded("a", "b", "c", time.Second)
	m.StreamOpened("s", "m")()
	m.ToolCalled("t", "s", time.Second)
	m.TokenMinted()
	m.ConfigReloaded(true)
	m.SetGauges(func() observability.Gauges { return observability.Gauges{} })
}

func hasPrefix(got map[string]float64, prefix string) bool {
	for k := range got {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func TestTaskMoved(t *testing.T) {
	m := observability.NewMetrics()
	m.TaskMoved("", "pending")
	m.TaskMoved("", "pending")
	m.TaskMoved("pending", "accepted")
	m.TaskMoved("accepted", "running")
	m.TaskMoved("running", "completed") // a final state is not gauged
	m.TaskMoved("pending", "")          // discarded
	m.TaskMoved("suspended", "running") // suspended on another replica: this one goes below zero
	got := scrape(t, m)
	for state, want := range map[string]float64{"pending": 0, "accepted": 0, "running": 1, "suspended": -1} {
		if k := fmt.Sprintf(`gatehouse_tasks{state=%q}`, state); got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if _, ok := got[`gatehouse_tasks{state="completed"}`]; ok {
		t.Error("a final state is gauged")
	}
}
