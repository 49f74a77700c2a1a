package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

type countingObserver struct{ gateway.Observer }

// TestCallValues: the values a stage sets for the call its context carries are what the
// context answers, without a context per value; a value set on a context below the call's
// wins; a nested call sees its parent's (as a context value would be inherited) until it
// sets its own; outside a call the setters
// fall back to context values.
func TestCallValues(t *testing.T) {
	parent := &gateway.Call{Method: "outer", Deadline: time.UnixMilli(5000)}
	pctx := gateway.WithCall(context.Background(), parent)
	obs := &countingObserver{}
	budget := &gateway.HopBudget{Reserve: time.Millisecond, MinRemaining: 2 * time.Millisecond}

	tests := []struct {
		name     string
		ctx      func() context.Context
		token    string
		budget   gateway.HopBudget
		observer bool
		callerDL bool
		call     *gateway.Call
	}{
		{"set on the call", func() context.Context {
			ctx := gateway.WithHopTokenFor(pctx, parent, "tok")
			ctx = gateway.WithHopBudgetFor(ctx, parent, budget)
			ctx = gateway.WithObserverFor(ctx, parent, obs)
			ctx = gateway.MarkCallerDeadline(ctx, parent)
			if ctx != pctx {
				t.Error("a value set for the context's own call derived a context")
			}
			return ctx
		}, "tok", *budget, true, true, parent},
		{"a context value below the call wins", func() context.Context {
			return gateway.WithHopToken(pctx, "below")
		}, "below", *budget, true, true, parent},
		{"a nested call sees its parent's until it sets its own", func() context.Context {
			return gateway.WithCall(pctx, &gateway.Call{Method: "inner"})
		}, "tok", *budget, true, true, nil},
		{"a nested call's own credential", func() context.Context {
			inner := &gateway.Call{Method: "inner"}
			return gateway.WithHopTokenFor(gateway.WithCall(pctx, inner), inner, "")
		}, "", *budget, true, true, nil},
		{"another call than the context's: context values", func() context.Context {
			other := &gateway.Call{Method: "other", Deadline: time.UnixMilli(7000)}
			ctx := gateway.WithHopTokenFor(context.Background(), other, "v")
			ctx = gateway.WithHopBudgetFor(ctx, other, budget)
			ctx = gateway.WithObserverFor(ctx, other, obs)
			return gateway.MarkCallerDeadline(ctx, other)
		}, "v", *budget, true, true, nil},
	}
	for _, tt := range tests { // in order: the first case sets the parent's values
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx()
			if got := gateway.HopToken(ctx); got != tt.token {
				t.Errorf("HopToken = %q, want %q", got, tt.token)
			}
			if got := gateway.HopBudgetFrom(ctx); got != tt.budget {
				t.Errorf("HopBudgetFrom = %+v, want %+v", got, tt.budget)
			}
			if got := gateway.ObserverFrom(ctx) == gateway.Observer(obs); got != tt.observer {
				t.Errorf("observer set = %v, want %v", got, tt.observer)
			}
			if _, got := gateway.CallerDeadline(ctx); got != tt.callerDL {
				t.Errorf("caller deadline marked = %v, want %v", got, tt.callerDL)
			}
			if tt.call != nil && gateway.CallFrom(ctx) != tt.call {
				t.Errorf("CallFrom = %v, want %v", gateway.CallFrom(ctx), tt.call)
			}
		})
	}
	if dl, ok := gateway.CallerDeadline(pctx); !ok || !dl.Equal(parent.Deadline) {
		t.Errorf("CallerDeadline = %v %v, want the call's deadline", dl, ok)
	}
}

// TestCallContextAllocs: the stages' values cost no allocation on the call's context.
func TestCallContextAllocs(t *testing.T) {
	c := &gateway.Call{Method: "m"}
	ctx := gateway.WithCall(context.Background(), c)
	obs, budget := &countingObserver{}, &gateway.HopBudget{}
	n := testing.AllocsPerRun(100, func() {
		x := gateway.WithObserverFor(ctx, c, obs)
		x = gateway.WithHopBudgetFor(x, c, budget)
		x = gateway.WithHopTokenFor(x, c, "tok")
		_ = gateway.HopToken(x)
		_ = gateway.HopBudgetFrom(x)
		_ = gateway.ObserverFrom(x)
	})
	if n != 0 {
		t.Errorf("%v allocations, want none", n)
	}
}
