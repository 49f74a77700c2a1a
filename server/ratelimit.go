package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/server/config"
	"github.com/gatehouse-dev/gatehouse/state"
)

// rateLimitChainStage returns the rate-limit stage of c, its buckets kept in kv (the
// process's state store, so they outlive a reload and are shared by replicas sharing it):
// nil, out of the chain, without a rate_limits section. A section that does not compile
// (a configuration built in code, unchecked) refuses every call rather than serve
// unlimited.
func (c *Config) rateLimitChainStage(kv state.KV, now func() time.Time, log *slog.Logger) gateway.Middleware {
	if c.RateLimits == nil {
		return nil
	}
	l, err := resilience.NewRateLimiter(*c.RateLimits, resilience.NewKVBuckets(kv), now, log)
	if err != nil {
		return refuseAll(gateway.NewError(schemas.CodeInternal).With("reason", "the rate_limits section does not compile").Wrap(err))
	}
	return l.Middleware()
}

// validateRateLimits reports the problems of the rate_limits section at their paths.
func (c *Config) validateRateLimits(doc *config.Document) config.ErrorList {
	if c.RateLimits == nil {
		return nil
	}
	var errs config.ErrorList
	for _, p := range c.RateLimits.Validate() {
		errs = append(errs, doc.Errorf("rate_limits."+p.Path, "%s", p.Msg))
	}
	return errs
}

// refuseAll is a stage that refuses every call with err.
func refuseAll(err *gateway.Error) gateway.Middleware {
	return func(gateway.Handler) gateway.Handler {
		return func(context.Context, *gateway.Call) (*gateway.Result, error) { return nil, err }
	}
}
