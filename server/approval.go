package server

import (
	"log/slog"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth/approval"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/state"
)

// approvalChainStage returns the approval stage of c over kv (auth/approval): nil, out of
// the chain, when c has no policy section (nothing can need approval then).
func (c *Config) approvalChainStage(kv state.KV, now func() time.Time, log *slog.Logger) gateway.Middleware {
	if c.Policy == nil {
		return nil
	}
	return approval.NewStage(c.Approvals, approval.NewStore(kv, c.Approvals, now, log), now, log)
}

// approvalRedeemStage returns the stage serving approvals.redeem of c over kv: nil, out of
// the chain, when c has no policy section (no call can be held then).
func (c *Config) approvalRedeemStage(kv state.KV, now func() time.Time, log *slog.Logger) gateway.Middleware {
	if c.Policy == nil {
		return nil
	}
	return approval.NewRedeemStage(c.Approvals, approval.NewStore(kv, c.Approvals, now, log), now, log)
}
