package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestHopBudgetDeadline is the per-hop arithmetic: the hop's deadline is the call's less
// the reserve; a hop with less than ε left after the reserve is refused with
// DEADLINE_EXCEEDED naming the hop's layer.
func TestHopBudgetDeadline(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	ms := time.Millisecond
	tests := []struct {
		name      string
		budget    gateway.HopBudget
		remaining time.Duration
		layer     string
		wantHop   time.Duration // from now
		refused   bool
	}{
		{"reserve taken off", gateway.HopBudget{Reserve: 5 * ms, MinRemaining: 50 * ms}, time.Second, gateway.LayerBackend, 995 * ms, false},
		{"exactly ε left after the reserve runs", gateway.HopBudget{Reserve: 5 * ms, MinRemaining: 50 * ms}, 55 * ms, gateway.LayerBackend, 50 * ms, false},
		{"a nanosecond under ε is refused", gateway.HopBudget{Reserve: 5 * ms, MinRemaining: 50 * ms}, 55*ms - 1, gateway.LayerUpstream, 50*ms - 1, true},
		{"the reserve alone eats the time", gateway.HopBudget{Reserve: 100 * ms, MinRemaining: 50 * ms}, 120 * ms, gateway.LayerTask, 20 * ms, true},
		{"already past", gateway.HopBudget{Reserve: 5 * ms, MinRemaining: 50 * ms}, -ms, gateway.LayerBackend, -6 * ms, true},
		{"zero budget: any time left runs", gateway.HopBudget{}, ms, gateway.LayerBackend, ms, false},
		{"zero budget: nothing left is refused", gateway.HopBudget{}, 0, gateway.LayerUpstream, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hop, err := tt.budget.Deadline(now, now.Add(tt.remaining), tt.layer)
			if got := hop.Sub(now); got != tt.wantHop {
				t.Errorf("hop deadline now+%s, want now+%s", got, tt.wantHop)
			}
			if (err != nil) != tt.refused {
				t.Fatalf("err %v, want refused=%v", err, tt.refused)
			}
			if err == nil {
				return
			}
			if err.Code() != schemas.CodeDeadlineExceeded || err.Data()["layer"] != tt.layer {
				t.Errorf("got %v (data %v), want DEADLINE_EXCEEDED at layer %s", err, err.Data(), tt.layer)
			}
			want := map[string]int64{
				"remaining_ms":     max(tt.remaining.Milliseconds(), 0),
				"reserve_ms":       tt.budget.Reserve.Milliseconds(),
				"min_remaining_ms": tt.budget.MinRemaining.Milliseconds(),
			}
			for k, v := range want {
				if err.Data()[k] != v {
					t.Errorf("data.%s = %v, want %d", k, err.Data()[k], v)
				}
			}
		})
	}
}

func TestHopBudgetAndCallerDeadlineTravelInContext(t *testing.T) {
	ctx := context.Background()
	if b := gateway.HopBudgetFrom(ctx); b != (gateway.HopBudget{}) {
		t.Errorf("empty context has budget %+v", b)
	}
	if _, ok := gateway.CallerDeadline(ctx); ok {
		t.Error("empty context has a caller deadline")
	}
	want := gateway.HopBudget{Reserve: 7 * time.Millisecond, MinRemaining: time.Second}
	dl := time.UnixMilli(1_700_000_000_000)
	ctx = gateway.WithCallerDeadline(gateway.WithHopBudget(ctx, want), dl)
	if b := gateway.HopBudgetFrom(ctx); b != want {
		t.Errorf("budget %+v, want %+v", b, want)
	}
	if got, ok := gateway.CallerDeadline(ctx); !ok || !got.Equal(dl) {
		t.Errorf("caller deadline %v %v, want %v", got, ok, dl)
	}
}

func TestErrDeadlineNamesTheLayer(t *testing.T) {
	for _, layer := range []string{gateway.LayerBoundary, gateway.LayerGateway, gateway.LayerBackend, gateway.LayerUpstream, gateway.LayerTask} {
		e := gateway.ErrDeadline(layer)
		if e.Code() != schemas.CodeDeadlineExceeded || e.Data()["layer"] != layer || e.IsWire() {
			t.Errorf("%s: %v %v", layer, e, e.Data())
		}
	}
	if e := gateway.AsError(context.DeadlineExceeded); e.Data()["layer"] != gateway.LayerGateway {
		t.Errorf("a bare context deadline maps to layer %v, want gateway", e.Data()["layer"])
	}
}
