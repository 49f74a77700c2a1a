package server

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
	nektev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/nekte/v1"
	toolv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/tool/v1"
)

// InternalConfig is the internal gRPC listener: gatehouse.v1.GatewayService (any routed
// method, for internal callers), nekte.v1.Nekte (the NEKTE primitives, answering
// UNIMPLEMENTED while no target serves nekte.*), tool.v1.ToolService (the bridged MCP
// tools), gatehouse.v1.PeerService (replicas fetching each other's persist: false NEKTE
// context envelopes, when NEKTE is on and the state store is shared), gRPC health
// checking per backend and server reflection.
type InternalConfig struct {
	Addr string `yaml:"addr" json:"addr,omitempty"`
	// MaxRecvBytes bounds one received message (default 4 MiB), and each message of the
	// calls this replica makes to the others' PeerService.
	MaxRecvBytes int `yaml:"max_recv_bytes" json:"max_recv_bytes,omitempty"`
	// Advertise is the host:port other replicas dial to reach this one's PeerService.
	// Empty: the address the listener is bound to, unless that is an unspecified IP
	// (0.0.0.0, ::): then persist: false envelopes stored here stay local.
	Advertise string `yaml:"advertise" json:"advertise,omitempty"`
}

// Defaults of the internal listener.
const (
	DefaultInternalAddr  = "127.0.0.1:50051"
	DefaultGRPCRecvBytes = 4 << 20
	healthInterval       = time.Second
)

// newGRPCServer builds the internal face.
func (s *Server) newGRPCServer(cfg InternalConfig) *grpc.Server {
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(cfg.MaxRecvBytes),
		grpc.ChainUnaryInterceptor(s.traceUnary), grpc.ChainStreamInterceptor(s.traceStream)) // tracing.go
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(gs, s.health)
	gatehousev1.RegisterGatewayServiceServer(gs, &gatewayService{s: s})
	toolv1.RegisterToolServiceServer(gs, &toolService{s: s})
	nektev1.RegisterNekteServer(gs, &nekteGRPC{s: s}) // per call, the configuration current then decides
	// gatehouse.v1.PeerService, when other replicas may share the state store (nektepeer.go).
	if err := s.startPeers(gs, cfg); err != nil {
		s.log.Error("persist: false NEKTE context envelopes stay local to this replica", "err", err)
	}
	reflection.Register(gs)
	return gs
}

// watchHealth keeps the health service in step with readiness: the overall status ("")
// and one entry per target name, until ctx is done.
func (s *Server) watchHealth(ctx context.Context) {
	t := time.NewTicker(healthInterval)
	defer t.Stop()
	for {
		s.updateHealth(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Server) updateHealth(ctx context.Context) {
	if s.health == nil {
		return
	}
	rt := s.acquire()
	defer rt.release()
	checkCtx, cancel := context.WithTimeout(ctx, healthInterval)
	defer cancel()
	problems := rt.ready(checkCtx)
	overall := healthpb.HealthCheckResponse_SERVING
	if len(problems) > 0 || s.draining.Load() {
		overall = healthpb.HealthCheckResponse_NOT_SERVING
	}
	s.health.SetServingStatus("", overall)
	for _, t := range rt.table.Targets() {
		st := healthpb.HealthCheckResponse_SERVING
		if _, bad := problems[t.Name()]; bad {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		s.health.SetServingStatus(t.Name(), st)
	}
}
