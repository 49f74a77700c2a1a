package observability_test

import (
	"context"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestProbedStages checks the counters probed stages feed: a retry stage that passes a
// call on twice counts one retry; an admission stage that refuses counts one rejection
// with its reason, one that passes the call on and gets OVERLOADED from below counts none.
func TestProbedStages(t *testing.T) {
	m := observability.NewMetrics()
	twice := func(next gateway.Handler) gateway.Handler {
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			_, _ = next(ctx, call)
			return next(ctx, call)
		}
	}
	refuse := func(gateway.Handler) gateway.Handler {
		return func(context.Context, *gateway.Call) (*gateway.Result, error) {
			return nil, gateway.NewError(schemas.CodeOverloaded).With("reason", "queue_full")
		}
	}
	pass := func(next gateway.Handler) gateway.Handler { return next }
	overloaded := func(context.Context, *gateway.Call) (*gateway.Result, error) {
		return nil, gateway.NewError(schemas.CodeOverloaded).With("reason", "queue_full")
	}
	ok := func(context.Context, *gateway.Call) (*gateway.Result, error) { return gateway.NewResult(nil), nil }
	backend := &admTargetStub{name: "calc"}
	call := func() *gateway.Call { return &gateway.Call{Method: "subtract", Target: backend} }

	_, _ = gateway.Chain(ok, observability.CountRetries(twice, m))(context.Background(), call())
	_, _ = gateway.Chain(ok, observability.CountRetries(pass, m))(context.Background(), call())
	_, _ = gateway.Chain(ok, observability.CountAdmissions(refuse, m))(context.Background(), call())
	_, _ = gateway.Chain(overloaded, observability.CountAdmissions(pass, m))(context.Background(), call())

	got := scrape(t, m)
	for k, want := range map[string]float64{
		`gatehouse_retries_total{backend="calc"}`:                                  1,
		`gatehouse_admission_rejections_total{backend="calc",reason="queue_full"}`: 1,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if observability.CountRetries(nil, m) != nil || observability.CountRateLimits(pass, nil) == nil {
		t.Error("a probe must leave an absent stage absent and a stage without metrics as it is")
	}
}

// admTargetStub is a target known by name only.
type admTargetStub struct{ name string }

func (a *admTargetStub) Name() string { return a.name }
func (a *admTargetStub) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	return gateway.NewResult(nil), nil
}

// BenchmarkMetricsStage measures the metrics stage's cost per call beside a stage that
// only passes the call on: metrics/op ÷ passthrough/op is the stage's relative cost.
func BenchmarkMetricsStage(b *testing.B) {
	ok := func(context.Context, *gateway.Call) (*gateway.Result, error) {
		return gateway.NewResult([]byte("19")), nil
	}
	passthrough := func(next gateway.Handler) gateway.Handler {
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) { return next(ctx, call) }
	}
	routed := func(method string) bool { return method == "subtract" }
	version := func(context.Context, gateway.Protocol) string { return "2.0" }
	target := &admTargetStub{name: "demo"}
	for _, bc := range []struct {
		name  string
		stage gateway.Middleware
	}{
		{"passthrough", passthrough},
		{"metrics", observability.MetricsStage(observability.NewMetrics(), routed, version)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := gateway.Chain(ok, bc.stage)
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				call := &gateway.Call{Method: "subtract", Protocol: gateway.ProtocolHTTP, Target: target}
				for pb.Next() {
					if _, err := h(ctx, call); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
