package server

import (
	"context"
	"net/http"
	"net/http/httptest"
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

	_, _ = gateway.Chain(ok, countRetries(twice, m))(context.Background(), call())
	_, _ = gateway.Chain(ok, countRetries(pass, m))(context.Background(), call())
	_, _ = gateway.Chain(ok, countAdmissions(refuse, m))(context.Background(), call())
	_, _ = gateway.Chain(overloaded, countAdmissions(pass, m))(context.Background(), call())

	got := scrapeMetrics(t, m)
	for k, want := range map[string]float64{
		`gatehouse_retries_total{backend="calc"}`:                                  1,
		`gatehouse_admission_rejections_total{backend="calc",reason="queue_full"}`: 1,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if countRetries(nil, m) != nil || countRateLimits(pass, nil) == nil {
		t.Error("a probe must leave an absent stage absent and a stage without metrics as it is")
	}
}

// admTargetStub is a target known by name only.
type admTargetStub struct{ name string }

func (a *admTargetStub) Name() string { return a.name }
func (a *admTargetStub) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	return gateway.NewResult(nil), nil
}

func scrapeMetrics(t *testing.T, m *observability.Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return flattenExposition(t, rec.Body)
}
