package resilience_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestStageConstructors: each stage is absent (nil) without its section, and a section
// that does not compile refuses every call with INTERNAL and the reason.
func TestStageConstructors(t *testing.T) {
	clk := newClock()
	kv := newKV(t, clk)
	absent := map[string]gateway.Middleware{
		"rate limit":  resilience.NewRateLimitStage(nil, kv, clk.Now, nil),
		"idempotency": resilience.NewIdempotencyStage(nil, kv, nil, nil),
		"retry":       resilience.NewRetryStage(nil, resilience.RetryOptions{}),
		"admission":   resilience.NewAdmission(nil, resilience.AdmissionDeps{}).Middleware(),
		"breaker":     resilience.NewBreakers(nil).Middleware(nil),
	}
	for name, mw := range absent {
		if mw != nil {
			t.Errorf("%s: a stage without its section", name)
		}
	}
	present := map[string]gateway.Middleware{
		"rate limit":  resilience.NewRateLimitStage(&resilience.RateLimitConfig{}, kv, clk.Now, nil),
		"idempotency": resilience.NewIdempotencyStage(&resilience.IdempotencyConfig{}, kv, nil, nil),
		"retry":       resilience.NewRetryStage(&resilience.RetryConfig{}, resilience.RetryOptions{}),
		"admission":   resilience.NewAdmission(&resilience.AdmissionConfig{}, resilience.AdmissionDeps{Now: time.Now}).Middleware(),
		"breaker":     resilience.NewBreakers(&resilience.BreakersConfig{}).Middleware(nil),
	}
	for name, mw := range present {
		if mw == nil {
			t.Errorf("%s: no stage for its section", name)
		}
	}
	ok := func(context.Context, *gateway.Call) (*gateway.Result, error) { return gateway.NewResult(nil), nil }
	for name, tt := range map[string]struct {
		mw     gateway.Middleware
		reason string
	}{
		"rate limit": {resilience.NewRateLimitStage(&resilience.RateLimitConfig{Rules: []resilience.RateLimitRule{{Rate: "often"}}}, kv, clk.Now, nil),
			"the rate_limits section does not compile"},
		"idempotency": {resilience.NewIdempotencyStage(&resilience.IdempotencyConfig{TTL: -time.Second}, kv, nil, nil),
			"the idempotency section is invalid"},
	} {
		_, err := gateway.Chain(ok, tt.mw)(context.Background(), &gateway.Call{Method: "m"})
		var e *gateway.Error
		if !errors.As(err, &e) || e.Code() != schemas.CodeInternal || e.Data()["reason"] != tt.reason {
			t.Errorf("%s: a section that does not compile answers %v", name, err)
		}
	}
}
