package server

import (
	"context"
	"sync/atomic"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// probeKey is the context key of one probed stage's pass counter (probeStage).
type probeKey struct{ _ byte }

// probeStage wraps stage so that report learns, once the stage returns, how many times it
// passed the call on: 0 for a call it refused itself, 2 for a call it retried once. The
// counter is keyed to this wrapping, so a call nested in another (a NEKTE capability
// running a method) is counted by its own pass through the pipeline. Nil when stage or m
// is nil: nothing to probe, or nowhere to report.
func probeStage(stage gateway.Middleware, m *observability.Metrics, report func(call *gateway.Call, passes int32, err error)) gateway.Middleware {
	if stage == nil || m == nil {
		return stage
	}
	key := &probeKey{}
	return func(next gateway.Handler) gateway.Handler {
		inner := stage(func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			if n, ok := ctx.Value(key).(*atomic.Int32); ok {
				n.Add(1)
			}
			return next(ctx, call)
		})
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			var passes atomic.Int32
			res, err := inner(context.WithValue(ctx, key, &passes), call)
			report(call, passes.Load(), err)
			return res, err
		}
	}
}

// refusedBy returns err's *gateway.Error when the stage refused the call itself (passes 0)
// with code, nil otherwise.
func refusedBy(passes int32, err error, code schemas.Code) *gateway.Error {
	if passes != 0 || err == nil {
		return nil
	}
	if e := gateway.AsError(err); e.Code() == code {
		return e
	}
	return nil
}

// countRateLimits probes the rate-limit stage: each call it refuses counts in
// gatehouse_rate_limit_rejections_total under the rule's configured name.
func countRateLimits(stage gateway.Middleware, m *observability.Metrics) gateway.Middleware {
	return probeStage(stage, m, func(_ *gateway.Call, passes int32, err error) {
		if e := refusedBy(passes, err, schemas.CodeRateLimited); e != nil {
			if rule, ok := e.Data()["policy"].(string); ok {
				m.RateLimited(rule)
			}
		}
	})
}

// countAdmissions probes the admission stage: each call it refuses counts in
// gatehouse_admission_rejections_total under its backend (backendOf; "" for a call to a
// target in the process, which only the global limit governs) and the refusal's reason.
func countAdmissions(stage gateway.Middleware, m *observability.Metrics) gateway.Middleware {
	return probeStage(stage, m, func(call *gateway.Call, passes int32, err error) {
		if e := refusedBy(passes, err, schemas.CodeOverloaded); e != nil {
			if reason, ok := e.Data()["reason"].(string); ok {
				m.AdmissionRejected(backendOf(call), reason)
			}
		}
	})
}

// countRetries probes the retry stage: each attempt past a call's first counts in
// gatehouse_retries_total under its backend (backendOf).
func countRetries(stage gateway.Middleware, m *observability.Metrics) gateway.Middleware {
	return probeStage(stage, m, func(call *gateway.Call, passes int32, _ error) {
		for range passes - 1 {
			m.Retried(backendOf(call))
		}
	})
}
