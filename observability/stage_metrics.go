package observability

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// MetricsStage returns the metrics stage: it puts m in the call's context as the targets'
// gateway.Observer and records each call's outcome and duration
// (protocol_requests_total, protocol_errors_total, protocol_request_duration_seconds). The
// method label is the method when routed reports that the configuration routes it by
// name (routing.Table.Names), or when it names an item of the MCP bridge's catalog
// (gateway.ReachOf), "other" otherwise, so a caller cannot grow the label set. version
// gives the version label of a call (Request.Version). Nil, out of the chain, when metrics
// are off (m nil).
func MetricsStage(m *Metrics, routed func(method string) bool, version func(ctx context.Context, p gateway.Protocol) string) gateway.Middleware {
	if m == nil {
		return nil
	}
	return func(next gateway.Handler) gateway.Handler {
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			start := time.Now()
			res, err := next(gateway.WithObserverFor(ctx, call, m), call)
			end := time.Now()
			gerr, d := gateway.AsError(err), end.Sub(start)
			routedName := routed(call.Method) || catalogItem(call)
			m.ObserveRequest(Request{
				Protocol: call.Protocol.String(),
				Method:   call.Method,
				Routed:   routedName,
				Version:  version(ctx, call.Protocol),
				Err:      gerr,
				Duration: d,
			})
			m.observeWindow(call, routedName, gerr, end, d)
			return res, err
		}
	}
}

// catalogItem reports whether call reached a tool, resource or prompt the MCP bridge's
// catalog lists (by its namespaced method, tools/call or a read method): the catalog
// bounds those names. Only a call of the bridge is looked up in the catalog.
func catalogItem(call *gateway.Call) bool {
	if !gateway.ReachOf(call, false).IsMCP() {
		return false
	}
	r := gateway.ReachOf(call, true)
	return r.IsMCP() && r.Server != ""
}

// probeKey is the context key of one probed stage's pass counter (probeStage).
type probeKey struct{ _ byte }

// probeStage wraps stage so that report learns, once the stage returns, how many times it
// passed the call on: 0 for a call it refused itself, 2 for a call it retried once. The
// counter is keyed to this wrapping, so a call nested in another (a NEKTE capability
// running a method) is counted by its own pass through the pipeline. Nil when stage or m
// is nil: nothing to probe, or nowhere to report.
func probeStage(stage gateway.Middleware, m *Metrics, report func(call *gateway.Call, passes int32, err error)) gateway.Middleware {
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

// CountRateLimits probes the rate-limit stage: each call it refuses counts in
// gatehouse_rate_limit_rejections_total under the rule's configured name. The stage as it
// is when m is nil, nil when it is.
func CountRateLimits(stage gateway.Middleware, m *Metrics) gateway.Middleware {
	return probeStage(stage, m, func(_ *gateway.Call, passes int32, err error) {
		if e := refusedBy(passes, err, schemas.CodeRateLimited); e != nil {
			if rule, ok := e.Data()["policy"].(string); ok {
				m.RateLimited(rule)
			}
		}
	})
}

// CountAdmissions probes the admission stage: each call it refuses counts in
// gatehouse_admission_rejections_total under its backend (gateway.BackendOf; "" for a call
// to a target in the process, which only the global limit governs) and the refusal's
// reason. The stage as it is when m is nil, nil when it is.
func CountAdmissions(stage gateway.Middleware, m *Metrics) gateway.Middleware {
	return probeStage(stage, m, func(call *gateway.Call, passes int32, err error) {
		if e := refusedBy(passes, err, schemas.CodeOverloaded); e != nil {
			if reason, ok := e.Data()["reason"].(string); ok {
				m.AdmissionRejected(gateway.BackendOf(call), reason)
			}
		}
	})
}

// CountRetries probes the retry stage: each attempt past a call's first counts in
// gatehouse_retries_total under its backend (gateway.BackendOf). The stage as it is when m
// is nil, nil when it is.
func CountRetries(stage gateway.Middleware, m *Metrics) gateway.Middleware {
	return probeStage(stage, m, func(call *gateway.Call, passes int32, _ error) {
		for range passes - 1 {
			m.Retried(gateway.BackendOf(call))
		}
	})
}
