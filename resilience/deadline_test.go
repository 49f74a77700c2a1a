package resilience_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

var t0 = time.UnixMilli(1_700_000_000_000)

func TestResolve(t *testing.T) {
	cfg := resilience.DeadlineConfig{Default: 30 * time.Second, Max: time.Minute, MinRemaining: 50 * time.Millisecond}
	tests := []struct {
		name     string
		callerMs int64
		want     time.Time
	}{
		{"no caller deadline takes the default", 0, t0.Add(30 * time.Second)},
		{"caller deadline is kept", t0.Add(5 * time.Second).UnixMilli(), t0.Add(5 * time.Second)},
		{"caller deadline past max is capped", t0.Add(time.Hour).UnixMilli(), t0.Add(time.Minute)},
		{"caller deadline in the past is kept (and refused later)", t0.Add(-time.Second).UnixMilli(), t0.Add(-time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cfg.Resolve(t0, tt.callerMs); !got.Equal(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNarrowNeverExtends(t *testing.T) {
	batch := t0.Add(10 * time.Second)
	if got := resilience.Narrow(batch, t0.Add(time.Hour).UnixMilli()); !got.Equal(batch) {
		t.Errorf("member extended the batch deadline to %v", got)
	}
	if got := resilience.Narrow(batch, t0.Add(time.Second).UnixMilli()); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("member could not shorten: %v", got)
	}
	if got := resilience.Narrow(batch, 0); !got.Equal(batch) {
		t.Errorf("absent member deadline changed it: %v", got)
	}
}

func TestDeadlineStage(t *testing.T) {
	cfg := resilience.DeadlineConfig{Default: time.Second, Max: time.Minute, MinRemaining: 50 * time.Millisecond}
	now := func() time.Time { return t0 }
	var sawDeadline time.Time
	next := func(ctx context.Context, _ *gateway.Call) (*gateway.Result, error) {
		sawDeadline, _ = ctx.Deadline()
		return gateway.NewResult(nil), nil
	}
	h := gateway.Chain(next, resilience.Deadline(cfg, now))
	tests := []struct {
		name     string
		deadline time.Time
		refused  bool
	}{
		{"exactly epsilon left runs", t0.Add(50 * time.Millisecond), false},
		{"one ms under epsilon is refused", t0.Add(49 * time.Millisecond), true},
		{"already past is refused", t0.Add(-time.Second), true},
		{"plenty left runs", t0.Add(time.Second), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sawDeadline = time.Time{}
			_, err := h(context.Background(), &gateway.Call{Deadline: tt.deadline})
			if tt.refused {
				ge := gateway.AsError(err)
				if ge == nil || ge.Code() != schemas.CodeDeadlineExceeded || ge.Data()["layer"] != "boundary" {
					t.Fatalf("got %v, want DEADLINE_EXCEEDED at layer boundary", err)
				}
				if !sawDeadline.IsZero() {
					t.Fatal("a refused call reached the next stage")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !sawDeadline.Equal(tt.deadline) {
				t.Errorf("context deadline %v, want %v", sawDeadline, tt.deadline)
			}
		})
	}
	t.Run("zero deadline takes the default", func(t *testing.T) {
		call := &gateway.Call{}
		if _, err := h(context.Background(), call); err != nil {
			t.Fatal(err)
		}
		if !call.Deadline.Equal(t0.Add(time.Second)) {
			t.Errorf("deadline %v", call.Deadline)
		}
	})
}

// TestDeadlineStageCarriesTheHopBudget: every hop below the stage finds the configured
// reserve and ε in its context; zero values take the defaults.
func TestDeadlineStageCarriesTheHopBudget(t *testing.T) {
	tests := []struct {
		name string
		cfg  resilience.DeadlineConfig
		want gateway.HopBudget
	}{
		{"configured", resilience.DeadlineConfig{Reserve: 20 * time.Millisecond, MinRemaining: 80 * time.Millisecond},
			gateway.HopBudget{Reserve: 20 * time.Millisecond, MinRemaining: 80 * time.Millisecond}},
		{"defaults", resilience.DeadlineConfig{},
			gateway.HopBudget{Reserve: resilience.DefaultReserve, MinRemaining: resilience.DefaultMinRemaining}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got gateway.HopBudget
			next := func(ctx context.Context, _ *gateway.Call) (*gateway.Result, error) {
				got = gateway.HopBudgetFrom(ctx)
				return gateway.NewResult(nil), nil
			}
			h := gateway.Chain(next, resilience.Deadline(tt.cfg, func() time.Time { return t0 }))
			if _, err := h(context.Background(), &gateway.Call{Deadline: t0.Add(time.Second)}); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("budget %+v, want %+v", got, tt.want)
			}
		})
	}
}

// BenchmarkDeadlineStage measures the stage's cost per call (the deadline context and the
// hop budget it carries) against a pass-through stage; report the ratio of the two ns/op.
func BenchmarkDeadlineStage(b *testing.B) {
	terminal := func(context.Context, *gateway.Call) (*gateway.Result, error) { return gateway.NewResult(nil), nil }
	pass := func(next gateway.Handler) gateway.Handler {
		return func(ctx context.Context, c *gateway.Call) (*gateway.Result, error) { return next(ctx, c) }
	}
	for _, bm := range []struct {
		name string
		mw   gateway.Middleware
	}{{"pass-through", pass}, {"deadline", resilience.Deadline(resilience.DeadlineConfig{}, time.Now)}} {
		b.Run(bm.name, func(b *testing.B) {
			h := gateway.Chain(terminal, bm.mw)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h(context.Background(), &gateway.Call{Deadline: time.Now().Add(time.Second)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDeadlineValidate: each broken relation between the section's fields is reported at
// its key, with defaults filling what is unset.
func TestDeadlineValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  resilience.DeadlineConfig
		want []resilience.ConfigError
	}{
		{"defaults", resilience.DeadlineConfig{}, nil},
		{"default past max", resilience.DeadlineConfig{Default: 10 * time.Minute, Max: time.Minute},
			[]resilience.ConfigError{{Path: "default", Msg: "default (10m0s) is longer than max (1m0s)"}}},
		{"min_remaining not below default", resilience.DeadlineConfig{Default: time.Second, MinRemaining: time.Second},
			[]resilience.ConfigError{
				{Path: "min_remaining", Msg: "min_remaining (1s) must be shorter than default (1s)"},
				{Path: "reserve", Msg: "reserve + min_remaining (1.005s) must be shorter than default (1s)"},
			}},
		{"reserve past its bound", resilience.DeadlineConfig{Reserve: time.Hour, Max: 2 * time.Hour, Default: 2 * time.Hour},
			[]resilience.ConfigError{{Path: "reserve", Msg: "reserve (1h0m0s) is longer than " + resilience.MaxReserve.String()}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cfg.Validate()
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("problem %d: got %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
