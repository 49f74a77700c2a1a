package server

import (
	"context"
	"log/slog"

	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/server/config"
	"github.com/gatehouse-dev/gatehouse/state"
)

// idempotencyChainStage returns the idempotency stage of c, its records kept in kv (the
// process's state store: records outlive a reload, and replicas sharing the store replay
// each other's results): nil, out of the chain, without an idempotency section.
func (c *Config) idempotencyChainStage(kv state.KV, log *slog.Logger) gateway.Middleware {
	if c.Idempotency == nil {
		return nil
	}
	s, err := resilience.NewIdempotency(*c.Idempotency, resilience.NewKVIdempotencyRecords(kv), changesState, log)
	if err != nil {
		return refuseAll(gateway.NewError(schemas.CodeInternal).With("reason", "the idempotency section is invalid").Wrap(err))
	}
	return s.Middleware()
}

// changesState is the idempotency stage's classifier: a call changes state unless the
// policy classified it READ_ONLY. Without a policy section every call is taken to change
// state, so a key a caller sends is always honoured.
func changesState(ctx context.Context, _ *gateway.Call) bool {
	d, ok := policy.DecisionFrom(ctx)
	return !ok || d.Mutation != policy.ReadOnly
}

// validateIdempotency reports the problems of the idempotency section at their paths.
func (c *Config) validateIdempotency(doc *config.Document) config.ErrorList {
	if c.Idempotency == nil {
		return nil
	}
	var errs config.ErrorList
	for _, p := range c.Idempotency.Validate() {
		errs = append(errs, doc.Errorf("idempotency."+p.Path, "%s", p.Msg))
	}
	return errs
}
