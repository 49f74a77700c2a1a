package grpcface

import (
	"context"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// healthInterval is how often health checking follows readiness.
const healthInterval = time.Second

// WatchHealth keeps the health service in step with readiness: the overall status ("")
// and one entry per target name, until ctx is done.
func (f *Face) WatchHealth(ctx context.Context) {
	t := time.NewTicker(healthInterval)
	defer t.Stop()
	for {
		f.updateHealth(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// updateHealth sets the overall status ("") by the replica's readiness rule, as /readyz
// decides it (server.readiness: by default NOT_SERVING only when no target can serve, so
// that one MCP server down does not pull the replica out of a gRPC load balancer), and one
// entry per target by its own health.
func (f *Face) updateHealth(ctx context.Context) {
	rt := f.gw.Acquire()
	defer rt.Release()
	checkCtx, cancel := context.WithTimeout(ctx, healthInterval)
	defer cancel()
	h := rt.Health(checkCtx)
	overall := healthpb.HealthCheckResponse_SERVING
	if ok, _ := h.Ready(); !ok || f.gw.Draining() {
		overall = healthpb.HealthCheckResponse_NOT_SERVING
	}
	f.health.SetServingStatus("", overall)
	for name, err := range h.Targets {
		st := healthpb.HealthCheckResponse_SERVING
		if err != nil {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		f.health.SetServingStatus(name, st)
	}
}
