package server

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/server/config"
)

// retryChainStage returns the retry stage of c: nil, out of the chain, without a retries
// section. Backends are named as for the breakers (backendOf), and a call's mutation class
// is the policy's (repeatable).
func (c *Config) retryChainStage() gateway.Middleware {
	if c.Retries == nil {
		return nil
	}
	return resilience.Retry(*c.Retries, resilience.RetryOptions{
		BackendOf:    backendOf,
		Repeatable:   repeatable,
		MinRemaining: c.Deadline.WithDefaults().MinRemaining,
	})
}

// repeatable reports whether the policy classified call READ_ONLY or IDEMPOTENT_WRITE.
// Without a policy section no call is classified, and only an idempotency key makes one
// retryable.
func repeatable(ctx context.Context, _ *gateway.Call) bool {
	d, ok := policy.DecisionFrom(ctx)
	return ok && (d.Mutation == policy.ReadOnly || d.Mutation == policy.IdempotentWrite)
}

// validateRetries reports the problems of the retries section at their paths.
func (c *Config) validateRetries(doc *config.Document) config.ErrorList {
	if c.Retries == nil {
		return nil
	}
	var errs config.ErrorList
	for _, p := range c.Retries.Validate() {
		errs = append(errs, doc.Errorf("retries."+p.Path, "%s", p.Msg))
	}
	return errs
}
