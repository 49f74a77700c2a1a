package grpcbackend

import (
	"context"

	"google.golang.org/grpc/metadata"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

var _ gateway.HopAuthenticated = (*Backend)(nil)

// HopAuth implements gateway.HopAuthenticated: every method of a backend is authenticated
// as its downstream_token section says, with the backend's name as the default audience.
func (b *Backend) HopAuth(*gateway.Call) gateway.HopAuth { return b.hop }

// appendHopCredential adds the hop credential the dispatch put in ctx to md as
// "authorization: Bearer <token>". A backend whose mode is none gets nothing, whatever ctx
// carries.
func (b *Backend) appendHopCredential(ctx context.Context, md metadata.MD) {
	if b.hop.Mode == gateway.HopNone {
		return
	}
	if tok := gateway.HopToken(ctx); tok != "" {
		md.Append("authorization", "Bearer "+tok)
	}
}
