package server

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/routing"
)

// allocStage is one stage of the small call's pipeline in the allocation budget: the
// stages of the shipped default configuration (configs/gatehouse.yaml: metrics on,
// deadline, route, hop token) and the breakers and admission control a hardened
// configuration adds, in the order server/chain.go runs them.
type allocStage struct {
	name string
	// budget is how many allocations the stage may add to a small call, with headroom.
	budget float64
	// order is the stage's place in the chain (chain.go), so that stages added one at a
	// time still run in the order they do in a gateway.
	order int
	make  func(*stageEnv) gateway.Middleware
}

// stageEnv is what the stages are built from, once per measurement.
type stageEnv struct {
	table *routing.Table
	m     *observability.Metrics
	now   func() time.Time
}

// stageAllocBudgets are the per-stage allocation budgets of the small call (a JSON-RPC
// request decoded, run through the pipeline to an in-process target, its response
// encoded), each stage added to the ones above it. "base" is the exchange without any
// stage but routing: decoding, the call and its context, the target's result, the
// response. Measured (at the commit that set them): base 5, metrics 0, deadline 4,
// hop_token 0, admission 2, breaker 0 — the budgets leave headroom of about half again.
// The deadline stage's context became lazy (gateway.WithCallDeadline: no timer until
// something waits on it): deadline 2, its budget lowered to 3.
var stageAllocBudgets = []allocStage{
	{"base", 8, 2, func(e *stageEnv) gateway.Middleware { return e.table.Route }},
	{"metrics", 2, 0, func(e *stageEnv) gateway.Middleware {
		return observability.MetricsStage(e.m, e.table.Names, protocolVersion)
	}},
	{"deadline", 3, 1, func(e *stageEnv) gateway.Middleware { return resilience.Deadline(resilience.DeadlineConfig{}, e.now) }},
	{"hop_token", 2, 5, func(*stageEnv) gateway.Middleware {
		return auth.NewHopTokenStage(func() *auth.KeyRing { return nil }, nil)
	}},
	{"admission", 4, 3, func(e *stageEnv) gateway.Middleware {
		return observability.CountAdmissions(resilience.NewAdmission(&resilience.AdmissionConfig{},
			resilience.AdmissionDeps{Now: e.now, Log: slog.New(slog.DiscardHandler)}).Middleware(), e.m)
	}},
	{"breaker", 2, 4, func(*stageEnv) gateway.Middleware {
		return resilience.NewBreakers(&resilience.BreakersConfig{}).Middleware(gateway.BackendOf)
	}},
}

// allocTarget answers subtract in process, as a backend that takes a minted hop token
// would be asked (the default downstream_token mode); its result is made once.
type allocTarget struct{ result []byte }

func (allocTarget) Name() string { return "calculator" }
func (allocTarget) HopAuth(*gateway.Call) gateway.HopAuth {
	return gateway.HopAuth{Mode: gateway.HopMint, Audience: "calculator"}
}
func (t allocTarget) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	return &gateway.Result{Value: t.result}, nil
}

// stagePipeline is the pipeline of the first n stages of stageAllocBudgets.
func stagePipeline(tb testing.TB, n int) *faces.Pipeline {
	tb.Helper()
	env := &stageEnv{table: routing.NewTable(), m: observability.NewMetrics(), now: time.Now}
	if err := env.table.Add("subtract", allocTarget{result: []byte("19")}); err != nil {
		tb.Fatal(err)
	}
	mws := make([]gateway.Middleware, len(stageAllocBudgets))
	for _, s := range stageAllocBudgets[:n] {
		mws[s.order] = s.make(env)
	}
	dl := resilience.DeadlineConfig{}.WithDefaults()
	return &faces.Pipeline{
		Handler: gateway.Chain(routing.Dispatch, mws...), Limits: jsonrpc.Limits{MaxDepth: 64, MaxStringBytes: 262144, MaxBatch: 50}, BatchConcurrency: 16,
		MaxBodyBytes: 1 << 20, MaxCollectedBytes: 1 << 20, Deadline: dl, Now: time.Now, Log: slog.New(slog.DiscardHandler),
	}
}

// smallCall runs the small call through p as the HTTP face does, reusing dst.
func smallCall(p *faces.Pipeline, body, dst []byte) []byte {
	ex := faces.Exchange{Principal: gateway.Principal{Subject: "anonymous", Anonymous: true}, Zone: gateway.ZoneExternal,
		Protocol: gateway.ProtocolHTTP, Deadline: p.Resolve(0), TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}
	return p.Serve(context.Background(), &ex, body, dst[:0])
}

// stageAllocs measures the allocations of a small call through the first n stages.
func stageAllocs(tb testing.TB, n int) float64 {
	tb.Helper()
	p, body, dst := stagePipeline(tb, n), []byte(subtractBody), make([]byte, 0, 256)
	if out := smallCall(p, body, dst); string(out) != `{"jsonrpc":"2.0","result":19,"id":1}` {
		tb.Fatalf("%d stages: response %s", n, out)
	}
	return testing.AllocsPerRun(200, func() { dst = smallCall(p, body, dst) })
}

// TestStageAllocBudgets fails when a stage of the small call's pipeline allocates more
// than its budget. Allocation counts change under the race detector (and sync.Pool drops
// items at random then), so it runs without it: `make test` runs it on its own.
func TestStageAllocBudgets(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector; make test runs this test without it")
	}
	prev := 0.0
	for i, s := range stageAllocBudgets {
		got := stageAllocs(t, i+1)
		if added := got - prev; added > s.budget {
			t.Errorf("stage %s adds %.1f allocations per small call; budget %.0f (with the stages above it: %.1f)", s.name, added, s.budget, got)
		}
		prev = got
	}
}

// BenchmarkStageAllocs runs the small call through the pipeline in process with the
// stages added one at a time (stageAllocBudgets) and reports, beside the usual figures of
// the whole pipeline so far, the allocations the stage adds per call (stage-allocs) and its
// budget (budget-allocs).
func BenchmarkStageAllocs(b *testing.B) {
	prev := 0.0
	for i, s := range stageAllocBudgets {
		whole := stageAllocs(b, i+1)
		added := math.Max(whole-prev, 0)
		prev = whole
		b.Run(s.name, func(b *testing.B) {
			p, body, dst := stagePipeline(b, i+1), []byte(subtractBody), make([]byte, 0, 256)
			b.ReportAllocs()
			for b.Loop() {
				dst = smallCall(p, body, dst)
			}
			b.ReportMetric(added, "stage-allocs")
			b.ReportMetric(s.budget, "budget-allocs")
		})
	}
}
