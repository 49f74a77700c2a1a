package otelstack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/testproc"
)

// ScrapeJob is the job label of the targets StartPrometheus scrapes.
const ScrapeJob = "gatehouse"

// prometheusConfig scrapes the targets' /metrics every scrape interval (%[1]s), which is
// also the scrape timeout and the rule evaluation interval.
const prometheusConfig = `global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
  evaluation_interval: %[1]s
scrape_configs:
  - job_name: %[2]s
    metrics_path: /metrics
    static_configs:
      - targets: [%[3]s]
`

// DefaultScrapeInterval is how often StartPrometheus scrapes its targets.
const DefaultScrapeInterval = time.Second

// MinScrapeInterval is the shortest scrape interval PrometheusOptions may set.
const MinScrapeInterval = 100 * time.Millisecond

// PrometheusOptions tunes StartPrometheusWith.
type PrometheusOptions struct {
	// ScrapeInterval is how often the targets are scraped, and the bound of one scrape
	// (default DefaultScrapeInterval, at least MinScrapeInterval, whole milliseconds).
	// A short one lets a rate() over a minute find two samples soon after the calls.
	ScrapeInterval time.Duration
}

// Prometheus is a running Prometheus scraping the targets given to StartPrometheus.
type Prometheus struct {
	// URL is the base URL of its HTTP API (http://127.0.0.1:port).
	URL string

	client *http.Client
}

// Sample is one element of a query's result: a vector's series, or a scalar (no labels).
type Sample struct {
	Metric map[string]string
	Value  float64
	Time   time.Time
}

// StartPrometheus runs Prometheus ($PROMETHEUS_BIN, else prometheus on PATH) on loopback with
// storage in a temporary directory, scraping the /metrics of each host:port target every second
// under job "gatehouse", waits until it is ready, and stops it when the test ends.
func StartPrometheus(t testing.TB, targets []string) *Prometheus {
	t.Helper()
	return StartPrometheusWith(t, targets, PrometheusOptions{})
}

// StartPrometheusWith is StartPrometheus with the scrape interval of opts. An interval below
// MinScrapeInterval or not in whole milliseconds fails the test.
func StartPrometheusWith(t testing.TB, targets []string, opts PrometheusOptions) *Prometheus {
	t.Helper()
	interval := opts.ScrapeInterval
	if interval == 0 {
		interval = DefaultScrapeInterval
	}
	if interval < MinScrapeInterval || interval%time.Millisecond != 0 {
		t.Fatalf("scrape interval %v: want whole milliseconds, at least %v", interval, MinScrapeInterval)
	}
	bin := binary(t, "Prometheus", "PROMETHEUS_BIN", "prometheus")
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, target := range targets {
		quoted[i] = strconv.Quote(target)
	}
	config := filepath.Join(dir, "prometheus.yml")
	body := fmt.Sprintf(prometheusConfig, strconv.FormatInt(interval.Milliseconds(), 10)+"ms", ScrapeJob, strings.Join(quoted, ", "))
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatalf("writing prometheus config: %v", err)
	}
	p := &Prometheus{client: newClient(t)}
	start(t, func() (*testproc.Process, error) { return p.launch(bin, dir, config) })
	return p
}

// launch starts Prometheus on a fresh port.
func (p *Prometheus) launch(bin, dir, config string) (*testproc.Process, error) {
	ports, err := testproc.FreeAddrs(1)
	if err != nil {
		return nil, err
	}
	proc, err := startProcess(dir, bin,
		"--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+ports[0],
	)
	if err != nil {
		return nil, err
	}
	base := "http://" + ports[0]
	if err := waitReady(proc, p.client, base+"/-/ready"); err != nil {
		stop(proc)
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	p.URL = base
	return proc, nil
}

// Query evaluates an instant PromQL query at the current time. A vector yields one Sample per
// series, a scalar one Sample without labels; other result types are an error.
func (p *Prometheus) Query(ctx context.Context, promql string) ([]Sample, error) {
	form := url.Values{"query": {promql}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/api/v1/query", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", promql, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", promql, err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body queryResponse
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("query %q: decoding HTTP %s: %w", promql, resp.Status, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s: %s", promql, body.ErrorType, body.Error)
	}
	samples, err := body.Data.samples()
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", promql, err)
	}
	return samples, nil
}

// WaitForSamples polls Query until it returns at least one sample, or ctx ends. A filter in the
// expression states what must hold, e.g. `sum(protocol_requests_total) >= 3`.
func (p *Prometheus) WaitForSamples(ctx context.Context, promql string) ([]Sample, error) {
	ticker := time.NewTicker(pollInterval * 4)
	defer ticker.Stop()
	for {
		samples, err := p.Query(ctx, promql)
		if err == nil && len(samples) > 0 {
			return samples, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return nil, fmt.Errorf("waiting for samples of %q: %w", promql, err)
		case <-ticker.C:
		}
	}
}

// queryResponse is the body of /api/v1/query.
type queryResponse struct {
	Status    string      `json:"status"`
	ErrorType string      `json:"errorType"`
	Error     string      `json:"error"`
	Data      queryResult `json:"data"`
}

type queryResult struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

// samples decodes a vector or scalar result.
func (r queryResult) samples() ([]Sample, error) {
	switch r.ResultType {
	case "vector":
		var series []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(r.Result, &series); err != nil {
			return nil, fmt.Errorf("decoding vector: %w", err)
		}
		samples := make([]Sample, 0, len(series))
		for _, s := range series {
			sample, err := parseSample(s.Value)
			if err != nil {
				return nil, err
			}
			sample.Metric = s.Metric
			samples = append(samples, sample)
		}
		return samples, nil
	case "scalar":
		var value [2]any
		if err := json.Unmarshal(r.Result, &value); err != nil {
			return nil, fmt.Errorf("decoding scalar: %w", err)
		}
		sample, err := parseSample(value)
		if err != nil {
			return nil, err
		}
		return []Sample{sample}, nil
	default:
		return nil, fmt.Errorf("result type %q is neither vector nor scalar", r.ResultType)
	}
}

// parseSample decodes a [unix seconds, "value"] pair.
func parseSample(pair [2]any) (Sample, error) {
	ts, ok := pair[0].(float64)
	if !ok {
		return Sample{}, fmt.Errorf("sample time %v is not a number", pair[0])
	}
	text, ok := pair[1].(string)
	if !ok {
		return Sample{}, fmt.Errorf("sample value %v is not a string", pair[1])
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return Sample{}, fmt.Errorf("sample value: %w", err)
	}
	return Sample{Value: v, Time: time.UnixMilli(int64(ts * 1000))}, nil
}
