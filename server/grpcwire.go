package server

import (
	"context"
	"net"

	"github.com/gatehouse-dev/gatehouse/faces"
	grpcface "github.com/gatehouse-dev/gatehouse/faces/grpc"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/state"
)

// newGRPCFace builds the internal face (faces/grpc) over s. Replicas reach each other's
// NEKTE context envelopes through it when there can be other replicas: NEKTE is on and
// the state store is shared.
func (s *Server) newGRPCFace(cfg grpcface.Config) *grpcface.Face {
	var peers *nekte.Service
	if s.nekte != nil && s.sharedState() {
		peers = s.nekte.svc
	}
	var addr net.Addr
	if s.internalLn != nil {
		addr = s.internalLn.Addr()
	}
	s.agentPeers(cfg.Advertise, cfg.MaxRecvBytes) // agentlink.go
	return grpcface.New(grpcface.Params{Gateway: grpcGateway{s: s}, Config: cfg, Addr: addr, Peers: peers, Log: s.log,
		TLS: serverConfig(s.tls.internal), PeerTLS: peerTLS(s.tls.internal), Services: s.grpcServices(), A2A: s.a2a}) // tls.go, agentlink.go
}

// sharedState reports whether other replicas may share the state store: one the embedder
// passed in (Options.State), or a backend other than the embedded one.
func (s *Server) sharedState() bool {
	return s.opts.State != nil || (s.stateCfg.Backend != "" && s.stateCfg.Backend != state.BackendEmbedded)
}

// grpcGateway is the server as the internal face sees it.
type grpcGateway struct{ s *Server }

var _ grpcface.Gateway = grpcGateway{}

// Acquire implements grpcface.Gateway.
func (g grpcGateway) Acquire() grpcface.Runtime { return grpcRuntime{g.s.acquire(), g.s} }

// Draining implements grpcface.Gateway.
func (g grpcGateway) Draining() bool { return g.s.draining.Load() }

// grpcRuntime is one runtime as the internal face sees it.
type grpcRuntime struct {
	*runtime
	s *Server
}

// Table implements grpcface.Runtime.
func (r grpcRuntime) Table() *routing.Table { return r.table }

// Health implements grpcface.Runtime: as /readyz's (adminRuntime.Health).
func (r grpcRuntime) Health(ctx context.Context) faces.TargetHealth {
	return r.s.targetHealth(ctx, r.runtime)
}
