package grpcbackend_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
)

// TestReaches: a call of a gRPC backend reaches the backend by name, and, with detail and
// the descriptors loaded, the full gRPC method its method resolves to.
func TestReaches(t *testing.T) {
	b := newBackend(t, grpcbackend.Config{
		Name: "calc", Address: serveCalculator(t), Descriptors: grpcbackend.DescriptorsConfig{Reflection: true},
		Methods:  map[string]string{"subtract": calc + "/Subtract"},
		Services: []grpcbackend.ServiceConfig{{Service: calc, Prefix: "calc."}},
	})
	waitLoaded(t, b)
	tests := []struct {
		method string
		detail bool
		want   gateway.Reach
	}{
		{"subtract", true, gateway.Reach{Kind: gateway.ReachGRPC, Server: "calc", Name: calc + "/Subtract"}},
		{"calc.getData", true, gateway.Reach{Kind: gateway.ReachGRPC, Server: "calc", Name: calc + "/GetData"}},
		{"calc.nope", true, gateway.Reach{Kind: gateway.ReachGRPC, Server: "calc"}},
		{"subtract", false, gateway.Reach{Kind: gateway.ReachGRPC, Server: "calc"}},
	}
	for _, tt := range tests {
		call := &gateway.Call{Method: tt.method, Target: b}
		if got := gateway.ReachOf(call, tt.detail); got != tt.want {
			t.Errorf("ReachOf(%s, %v) = %+v, want %+v", tt.method, tt.detail, got, tt.want)
		}
	}
}
