package resilience_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
)

// BenchmarkAdmission measures the admission stage's own cost on a call it admits at once
// (the global limit and the backend's queue both have room), against the same handler
// without the stage, from parallel callers.
func BenchmarkAdmission(b *testing.B) {
	tgt := &admTarget{name: "t"}
	dispatch := func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
		return call.Target.Invoke(ctx, call)
	}
	cfg := &resilience.AdmissionConfig{
		Global:  resilience.AdaptiveConfig{InitialLimit: 10000, MaxLimit: 10000},
		Default: resilience.TargetLimits{MaxConcurrency: 10000},
	}
	for _, bc := range []struct {
		name string
		h    gateway.Handler
	}{
		{"stage", gateway.Chain(dispatch, resilience.Admission(cfg, nil, time.Now, nil))},
		{"none", dispatch},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				call := admCall("ok", tgt, gateway.ZoneExternal)
				for pb.Next() {
					if _, err := bc.h(context.Background(), call); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
