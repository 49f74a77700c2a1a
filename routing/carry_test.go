package routing_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing"
)

// readyTarget reports the readiness it is set to.
type readyTarget struct {
	name string
	err  atomic.Pointer[error]
}

func newReady(name string, err error) *readyTarget {
	t := &readyTarget{name: name}
	t.err.Store(&err)
	return t
}

func (r *readyTarget) Name() string                { return r.name }
func (r *readyTarget) Ready(context.Context) error { return *r.err.Load() }
func (r *readyTarget) set(err error)               { r.err.Store(&err) }
func (r *readyTarget) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	return nil, nil
}

func tableOf(t *testing.T, targets ...gateway.Target) *routing.Table {
	t.Helper()
	tb := routing.NewTable()
	tb.Add("builtin", builtin{})
	for _, tg := range targets {
		if err := tb.Add(tg.Name()+".Call", tg); err != nil {
			t.Fatal(err)
		}
	}
	return tb
}

func TestHealthListsReadiersOnly(t *testing.T) {
	down := errors.New("connection refused")
	tb := tableOf(t, newReady("a", nil), newReady("b", down))
	h := tb.Health(context.Background())
	if len(h) != 2 || h["a"] != nil || !errors.Is(h["b"], down) {
		t.Fatalf("Health = %v, want a up, b down, the builtin target not listed", h)
	}
}

func TestAwaitReady(t *testing.T) {
	down := errors.New("starting")
	tests := []struct {
		name       string
		prev, next []gateway.Target
		wantErr    string // empty: ready
	}{
		{"same targets up", []gateway.Target{newReady("a", nil)}, []gateway.Target{newReady("a", nil)}, ""},
		{"down in prev too: not waited for", []gateway.Target{newReady("a", down)}, []gateway.Target{newReady("a", down)}, ""},
		{"new in next: not waited for", nil, []gateway.Target{newReady("n", down)}, ""},
		{"gone from next: nothing to wait for", []gateway.Target{newReady("a", nil)}, nil, ""},
		{"up in prev, down in next", []gateway.Target{newReady("a", nil), newReady("b", nil)},
			[]gateway.Target{newReady("a", nil), newReady("b", down)}, "b (starting)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := routing.AwaitReady(context.Background(), tableOf(t, tt.next...), tableOf(t, tt.prev...), 30*time.Millisecond, "x.ready_timeout")
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("AwaitReady = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "x.ready_timeout")):
				t.Fatalf("AwaitReady = %v, want an error naming %q and the setting", err, tt.wantErr)
			}
		})
	}
}

func TestAwaitReadyWaitsForTheTargetToComeUp(t *testing.T) {
	next := newReady("a", errors.New("starting"))
	go func() {
		time.Sleep(30 * time.Millisecond)
		next.set(nil)
	}()
	if err := routing.AwaitReady(context.Background(), tableOf(t, next), tableOf(t, newReady("a", nil)), 10*time.Second, "x"); err != nil {
		t.Fatalf("AwaitReady = %v, want nil once the target is up", err)
	}
}

func TestAwaitReadyStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := routing.AwaitReady(ctx, tableOf(t, newReady("a", errors.New("starting"))), tableOf(t, newReady("a", nil)), time.Minute, "x")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("AwaitReady = %v, want context.Canceled", err)
	}
}
