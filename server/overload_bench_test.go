package server

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Overload benchmark: a backend of fixed service time and a fixed number of workers, so
// its saturation rate is well defined, behind the admission stage sized as
// docs/resilience.md recommends (max_concurrency = the workers, queue = half of them,
// throttle = the queue's drain time, the global adaptive limit at its defaults). One run
// measures, on one gateway:
//
//   - peak: the goodput of closed-loop callers that keep the backend and its queue busy;
//   - half load: open-loop arrivals at 0.5 × peak, the admitted calls' p99;
//   - 1.5× and 3× peak: open-loop arrivals; goodput (calls answered with a result per
//     second) ÷ peak, the admitted calls' p99 ÷ the p99 at half load, and the p99 latency of
//     a shed call ÷ the service time.
//
// Goodput is counted over the steady part of each phase (its first fifth, the ramp, is left
// out). The figures are ratios measured in the same run; one op is one whole run of the
// phases, about 5 s.
const (
	overloadWorkers = 8
	overloadService = 20 * time.Millisecond
	overloadPhase   = time.Second
)

func BenchmarkOverload(b *testing.B) {
	url := benchOverloadGateway(b)
	client := newOverloadClient(url)
	defer client.close()
	ctx := b.Context()
	b.ResetTimer()
	for range b.N {
		client.openLoop(ctx, 0.5*overloadWorkers/overloadService.Seconds(), overloadPhase/2) // warm up: connections, the baseline
		peak := goodput(client.closedLoop(ctx, 2*overloadWorkers, overloadPhase), overloadPhase/5, overloadPhase)
		if peak <= 0 {
			b.Fatal("no call succeeded at peak")
		}
		phases := map[string][]loadSample{}
		for _, f := range []struct {
			name   string
			factor float64
		}{{"half", 0.5}, {"1.5x", 1.5}, {"3x", 3}} {
			samples := client.openLoop(ctx, f.factor*peak, overloadPhase)
			if o := classifyLoad(samples); o.other > 0 {
				b.Fatalf("at %s: %d calls neither succeeded nor were shed, e.g. %v", f.name, o.other, o.examples)
			}
			phases[f.name] = samples
		}
		admitted := func(s loadSample) bool { return s.ok() }
		shed := func(s loadSample) bool { return s.shed() }
		p99Half := latencyQuantile(phases["half"], admitted, 0.99)
		rejectP99 := latencyQuantile(phases["3x"], shed, 0.99)
		b.ReportMetric(goodput(phases["1.5x"], overloadPhase/5, overloadPhase)/peak, "goodput-1.5x/peak")
		b.ReportMetric(goodput(phases["3x"], overloadPhase/5, overloadPhase)/peak, "goodput-3x/peak")
		b.ReportMetric(float64(latencyQuantile(phases["3x"], admitted, 0.99))/float64(p99Half), "p99-3x/p99-half")
		b.ReportMetric(float64(rejectP99)/float64(overloadService), "reject-p99/service")
		b.ReportMetric(float64(rejectP99.Microseconds()), "reject-p99-µs")
		b.ReportMetric(float64(latencyQuantile(phases["3x"], shed, 0.5).Microseconds()), "reject-p50-µs")
		b.ReportMetric(peak/(overloadWorkers/overloadService.Seconds()), "peak/capacity")
	}
}

// benchOverloadGateway starts a gateway whose method work reaches the fixed-service
// backend, and returns its JSON-RPC URL.
func benchOverloadGateway(b *testing.B) string {
	b.Helper()
	cfg, err := Parse("bench.yaml", fmt.Appendf(nil, `
server: {boundary: {addr: "127.0.0.1:0"}, admin: {addr: "127.0.0.1:0"}}
log: {level: error}
auth: {anonymous: {}}
admission:
  backends:
    fixed: {max_concurrency: %d, queue: %d, throttle: %s}
`, overloadWorkers, overloadWorkers/2, overloadService/2))
	if err != nil {
		b.Fatal(err)
	}
	return benchServe(b, cfg, Options{Logger: slog.New(slog.DiscardHandler),
		Targets: map[string]gateway.Target{"work": newFixedService(overloadWorkers, overloadService)}})
}
