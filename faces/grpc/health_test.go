package grpcface

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing"
)

type healthRuntime struct{ h faces.TargetHealth }

func (r healthRuntime) Pipeline() *faces.Pipeline                 { return nil }
func (r healthRuntime) Authenticator() gateway.Authenticator      { return nil }
func (r healthRuntime) Release()                                  {}
func (r healthRuntime) Table() *routing.Table                     { return nil }
func (r healthRuntime) Health(context.Context) faces.TargetHealth { return r.h }

type healthGateway struct {
	rt       healthRuntime
	draining bool
}

func (g healthGateway) Acquire() Runtime { return g.rt }
func (g healthGateway) Draining() bool   { return g.draining }

// TestHealthFollowsReadiness: the overall status follows the replica's readiness rule, as
// /readyz does — one target down leaves the replica SERVING under "any" — and each target
// has its own entry.
func TestHealthFollowsReadiness(t *testing.T) {
	down := errors.New("down")
	tests := []struct {
		name     string
		h        faces.TargetHealth
		draining bool
		overall  healthpb.HealthCheckResponse_ServingStatus
		targets  map[string]healthpb.HealthCheckResponse_ServingStatus
	}{
		{"all up", faces.TargetHealth{Targets: map[string]error{"calc": nil, "mcp/a": nil}}, false,
			healthpb.HealthCheckResponse_SERVING,
			map[string]healthpb.HealthCheckResponse_ServingStatus{"calc": healthpb.HealthCheckResponse_SERVING, "mcp/a": healthpb.HealthCheckResponse_SERVING}},
		{"one MCP upstream down, any", faces.TargetHealth{Targets: map[string]error{"calc": nil, "mcp/a": down}}, false,
			healthpb.HealthCheckResponse_SERVING,
			map[string]healthpb.HealthCheckResponse_ServingStatus{"calc": healthpb.HealthCheckResponse_SERVING, "mcp/a": healthpb.HealthCheckResponse_NOT_SERVING}},
		{"one down, all", faces.TargetHealth{Targets: map[string]error{"calc": nil, "mcp/a": down}, All: true}, false,
			healthpb.HealthCheckResponse_NOT_SERVING, nil},
		{"every target down", faces.TargetHealth{Targets: map[string]error{"calc": down, "mcp/a": down}}, false,
			healthpb.HealthCheckResponse_NOT_SERVING, nil},
		{"no targets", faces.TargetHealth{}, false, healthpb.HealthCheckResponse_SERVING, nil},
		{"draining", faces.TargetHealth{Targets: map[string]error{"calc": nil}}, true, healthpb.HealthCheckResponse_NOT_SERVING, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Face{gw: healthGateway{rt: healthRuntime{tt.h}, draining: tt.draining}, health: health.NewServer()}
			f.updateHealth(t.Context())
			check := func(service string) healthpb.HealthCheckResponse_ServingStatus {
				r, err := f.health.Check(t.Context(), &healthpb.HealthCheckRequest{Service: service})
				if err != nil {
					t.Fatalf("%q: %v", service, err)
				}
				return r.GetStatus()
			}
			if got := check(""); got != tt.overall {
				t.Errorf("overall %v, want %v", got, tt.overall)
			}
			for name, want := range tt.targets {
				if got := check(name); got != want {
					t.Errorf("%s: %v, want %v", name, got, want)
				}
			}
		})
	}
}
