package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/mcptest"
	"github.com/gatehouse-dev/gatehouse/internal/otelstack"
	"github.com/gatehouse-dev/gatehouse/internal/promql"
)

// promqlScrapeInterval is the scrape interval of the test's Prometheus: short, so that a
// rate over a minute finds its two samples soon after the load.
const promqlScrapeInterval = 200 * time.Millisecond

// promqlSettle bounds the wait for the load's traces in Prometheus (promqlLoadChecks);
// promqlExprWait bounds the wait for one expression's data after that, when every series
// has been scraped at least twice (a few expressions failing keep the test short).
const (
	promqlSettle   = 20 * time.Second
	promqlExprWait = 1500 * time.Millisecond
)

// promqlEmptyWhenHealthy lists the shipped expressions (file and place, as promql.Expr
// names them) that return nothing in a healthy system, with the reason. Each is checked
// to return nothing here; one that returns data must leave the list.
var promqlEmptyWhenHealthy = map[string]string{}

// promqlLoadChecks are what the load must have done, beyond making series exist: each
// query must return data.
var promqlLoadChecks = []string{
	`sum by (protocol) (protocol_requests_total{status="success"}) > 0`,
	`sum by (protocol) (protocol_requests_total{status="error"}) > 0`,
	`circuit_breaker_state{service="broken"} == 2`,
	`gatehouse_admission_rejections_total{backend="gate"} > 0`,
	`gatehouse_queue_wait_seconds_count{backend="gate"} > 0`,
	`gatehouse_rate_limit_rejections_total{rule="limited"} > 0`,
	`gatehouse_retries_total{backend="flaky"} > 0`,
	`gatehouse_tokens_minted_total > 0`,
	`gatehouse_tokens_verified_total{result="verified"} > 0`,
	`gatehouse_tokens_verified_total{result="refused"} > 0`,
	`gatehouse_config_reloads_total{result="refused"} > 0`,
	`gatehouse_approvals_pending > 0`,
	`gatehouse_upstream_starts_total{server="demo"} > 0`,
	`protocol_errors_total{error_code="-32603"} > 0`,
	`grpc_active_streams{method="Count"} == 0`,
	`mcp_tool_call_duration_seconds_count > 0`,
	`sum(protocol_requests_total{method="nekte.delegate"}) >= 2`,
}

// TestPromQLExpressionsReturnData is the proof that the shipped dashboards and alerts
// query what Gatehouse exports: a gateway with every part they watch takes a load that
// makes each of their series exist, a real Prometheus scrapes its /metrics, and every
// expression of promql.Expressions (Grafana variables substituted, alert thresholds
// stripped) returns data — but those promqlEmptyWhenHealthy lists, which return none.
func TestPromQLExpressionsReturnData(t *testing.T) {
	exprs, err := promql.Expressions(mcptest.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	g := startPromQLGateway(t)
	prom := otelstack.StartPrometheusWith(t, []string{strings.TrimPrefix(g.admin, "http://")},
		otelstack.PrometheusOptions{ScrapeInterval: promqlScrapeInterval})
	g.driveAll(t)

	settle, cancel := context.WithTimeout(t.Context(), promqlSettle)
	defer cancel()
	for _, q := range promqlLoadChecks {
		if _, err := prom.WaitForSamples(settle, q); err != nil {
			t.Fatalf("the load left no trace: %v", err)
		}
	}
	time.Sleep(3 * promqlScrapeInterval) // every series scraped twice: a rate has its two samples
	for _, e := range exprs {
		checkExpr(t, prom, e)
	}
}

// checkExpr requires e to return data within promqlExprWait, or none at all when
// promqlEmptyWhenHealthy lists it.
func checkExpr(t *testing.T, prom *otelstack.Prometheus, e promql.Expr) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), promqlExprWait)
	defer cancel()
	key := e.File + ": " + e.Where
	if reason, ok := promqlEmptyWhenHealthy[key]; ok {
		samples, err := prom.Query(ctx, e.Query)
		if err != nil || len(samples) > 0 {
			t.Errorf("%s: %q is listed as empty when healthy (%s), yet returned %v, %v", key, e.Query, reason, samples, err)
		}
		return
	}
	samples, err := prom.WaitForSamples(ctx, e.Query)
	if err != nil {
		t.Errorf("%s: %q returned no data: %v", key, e.Query, err)
		return
	}
	t.Logf("%s: %d series", key, len(samples))
}
