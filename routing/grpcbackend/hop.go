package grpcbackend

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

var _ gateway.HopAuthenticated = (*Backend)(nil)

// HopAuth implements gateway.HopAuthenticated: every method of a backend is authenticated
// as its downstream_token section says, with the backend's name as the default audience.
func (b *Backend) HopAuth(*gateway.Call) gateway.HopAuth { return b.hop }

// hopCredential is the hop credential the dispatch put in ctx, sent as
// "authorization: Bearer <token>"; "" for none. A backend whose mode is none gets nothing,
// whatever ctx carries.
func (b *Backend) hopCredential(ctx context.Context) string {
	if b.hop.Mode == gateway.HopNone {
		return ""
	}
	return gateway.HopToken(ctx)
}
