package grpcface

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"

	"google.golang.org/grpc"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/gatehouse-dev/gatehouse/routing/nekte"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
	a2av1 "github.com/gatehouse-dev/gatehouse/schemas/gen/lf/a2a/v1"
	nektev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/nekte/v1"
	toolv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/tool/v1"
)

// Face is the internal gRPC face: one gRPC server with the gateway's services, for the
// life of the process (every RPC runs on the configuration current then).
type Face struct {
	gw     Gateway
	gs     *grpc.Server
	health *health.Server
	log    *slog.Logger
}

// Params are what New builds the face from.
type Params struct {
	// Gateway is the gateway the services run calls through.
	Gateway Gateway
	// Config is the server.internal section, with its defaults applied.
	Config Config
	// Addr is the address the internal listener is bound to (advertised to other replicas
	// when Config.Advertise is empty); nil when unknown.
	Addr net.Addr
	// Peers is the NEKTE service other replicas reach through gatehouse.v1.PeerService, nil
	// when there can be none: NEKTE is off, or the state store is not shared.
	Peers *nekte.Service
	// Log receives the face's warnings; nil discards them.
	Log *slog.Logger
	// TLS, when set, is the listener's TLS configuration (server.internal.tls): the face
	// serves gRPC over TLS only, and a client certificate it verifies reaches the
	// authenticator (gateway.Credentials.ClientCert). nil: plaintext.
	TLS *tls.Config
	// PeerTLS, when set, is what this replica dials other replicas' PeerService with (the
	// listener's TLS: they serve it too); nil: plaintext, as the listener serves.
	PeerTLS *tls.Config
	// Services are served beside the gateway's own (services.go): the agent link.
	Services []Service
	// A2A, when set, is the A2A face that lf.a2a.v1.A2AService (a2a.go) runs its
	// operations on; each RPC answers UNIMPLEMENTED while the configuration current then
	// has no a2a section or turns the binding off (a2a.grpc: false).
	A2A A2A
}

// New builds the internal face: the gRPC server with its interceptors (tracing.go) and
// services registered. Serve starts it.
func New(p Params) *Face {
	if p.Log == nil {
		p.Log = slog.New(slog.DiscardHandler)
	}
	f := &Face{gw: p.Gateway, health: health.NewServer(), log: p.Log}
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(p.Config.MaxRecvBytes),
		grpc.ChainUnaryInterceptor(f.traceUnary), grpc.ChainStreamInterceptor(f.traceStream)} // tracing.go
	if p.TLS != nil {
		opts = append(opts, grpc.Creds(grpccreds.NewTLS(p.TLS)))
	}
	f.gs = grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(f.gs, f.health)
	gatehousev1.RegisterGatewayServiceServer(f.gs, &gatewayService{gw: f.gw})
	toolv1.RegisterToolServiceServer(f.gs, &toolService{gw: f.gw})
	nektev1.RegisterNekteServer(f.gs, &nekteGRPC{gw: f.gw}) // per call, the configuration current then decides
	if p.A2A != nil {
		a2av1.RegisterA2AServiceServer(f.gs, &a2aGRPC{gw: f.gw, a2a: p.A2A})
	}
	for _, svc := range p.Services {
		svc.RegisterGRPC(f.gs, f.authenticate)
	}
	// gatehouse.v1.PeerService, when other replicas may share the state store (peer.go).
	if err := f.startPeers(p); err != nil {
		f.log.Error("persist: false NEKTE context envelopes stay local to this replica", "err", err)
	}
	reflection.Register(f.gs)
	return f
}

// Serve serves RPCs on ln until the face is stopped (grpc.Server.Serve).
func (f *Face) Serve(ln net.Listener) error { return f.gs.Serve(ln) }

// HealthShutdown sets every service NOT_SERVING, for good: the gateway is draining.
func (f *Face) HealthShutdown() { f.health.Shutdown() }

// GracefulStop lets running RPCs finish until ctx ends, then stops hard.
func (f *Face) GracefulStop(ctx context.Context) {
	done := make(chan struct{})
	go func() { f.gs.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		f.gs.Stop()
		<-done
	}
}

// Stop closes the listener and every connection at once, failing the RPCs in flight.
func (f *Face) Stop() { f.gs.Stop() }
