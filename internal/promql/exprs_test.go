package promql_test

import (
	"slices"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/promql"
)

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`up{job="gatehouse"} == 0`, []string{"up"}},
		{`sum by (protocol) (rate(protocol_requests_total[$__rate_interval]))`, []string{"protocol_requests_total"}},
		{`histogram_quantile(0.99, sum by (protocol, le) (rate(protocol_request_duration_seconds_bucket[5m]))) > 2`,
			[]string{"protocol_request_duration_seconds_bucket"}},
		{`sum(rate(a_total{status="error", method=~"x.*"}[5m])) / sum(rate(b_total[5m])) > 1e3`, []string{"a_total", "b_total"}},
		{`(sum(rate(x[10m])) or vector(0)) == 0`, []string{"x"}},
		{`topk(10, sum by (method) (y)) unless on (method) z offset 5m`, []string{"y", "z"}},
		{`max by (service) (circuit_breaker_state{service="by"}) == 2`, []string{"circuit_breaker_state"}},
		{`sum without (instance) (rate(w[1h]))`, []string{"w"}},
	}
	for _, tt := range tests {
		if got := promql.MetricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("MetricNames(%s) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

func TestKnown(t *testing.T) {
	for name, want := range map[string]bool{
		"protocol_requests_total": true, "protocol_request_duration_seconds_bucket": true,
		"gatehouse_queue_wait_seconds_count": true, "up": true, "gatehouse_tasks": true,
		"protocol_request_duration_seconds": false, "protocol_requests_total_bucket": false,
		"gatehouse_requests_total": false, "http_requests_total": false,
	} {
		if got := promql.Known(name); got != want {
			t.Errorf("Known(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestQueryForms(t *testing.T) {
	for in, want := range map[string]string{
		`up == 0`:                    `up`,
		`sum(rate(a[5m])) > 0.05`:    `sum(rate(a[5m]))`,
		`(x or vector(0)) == 0`:      `(x or vector(0))`,
		`max(y) >= bool 2`:           `max(y)`,
		`rate(a[$__rate_interval])`:  `rate(a[$__rate_interval])`,
		`histogram_quantile(0.9, b)`: `histogram_quantile(0.9, b)`,
	} {
		if got := promql.StripThreshold(in); got != want {
			t.Errorf("StripThreshold(%s) = %s, want %s", in, got, want)
		}
	}
	if got := promql.Substitute(`increase(a[$__range]) + rate(b[$__rate_interval]) + rate(c[${__interval}])`); got != `increase(a[1h]) + rate(b[1m]) + rate(c[1m])` {
		t.Errorf("Substitute: %s", got)
	}
}
