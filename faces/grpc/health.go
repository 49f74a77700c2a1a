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

func (f *Face) updateHealth(ctx context.Context) {
	rt := f.gw.Acquire()
	defer rt.Release()
	checkCtx, cancel := context.WithTimeout(ctx, healthInterval)
	defer cancel()
	problems := rt.Ready(checkCtx)
	overall := healthpb.HealthCheckResponse_SERVING
	if len(problems) > 0 || f.gw.Draining() {
		overall = healthpb.HealthCheckResponse_NOT_SERVING
	}
	f.health.SetServingStatus("", overall)
	for _, t := range rt.Table().Targets() {
		st := healthpb.HealthCheckResponse_SERVING
		if _, bad := problems[t.Name()]; bad {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		f.health.SetServingStatus(t.Name(), st)
	}
}
