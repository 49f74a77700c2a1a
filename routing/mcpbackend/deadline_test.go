package mcpbackend_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestUpstreamRequestBoundedByTheCallsDeadline: a tool slower than the call's deadline is
// cancelled upstream (notifications/cancelled) at the deadline less the reserve and fails
// with DEADLINE_EXCEEDED at layer upstream, before the caller's own deadline passes; a hop
// left with less than ε after the reserve is refused without being sent; request_timeout
// still bounds a request when the deadline is later.
func TestUpstreamRequestBoundedByTheCallsDeadline(t *testing.T) {
	const unit = 500 * time.Millisecond
	cfg := fixture("fx", map[string]string{"FIXTURE_HOP": "1"})
	cfg.RequestTimeout = 3 * unit
	b, logs := start(t, []mcpbackend.Config{cfg})
	budget := gateway.HopBudget{Reserve: unit / 4, MinRemaining: unit / 8}
	tests := []struct {
		name      string
		deadline  time.Duration // from now; 0: none
		sent      bool
		wantLayer string
		within    time.Duration // the call returns within this (a fraction past the bound it hit)
	}{
		{"the deadline less the reserve cuts a slow tool", 2 * unit, true, gateway.LayerUpstream, 2*unit - budget.Reserve},
		{"request_timeout cuts it when the deadline is later", 10 * unit, true, gateway.LayerUpstream, cfg.RequestTimeout},
		{"request_timeout cuts it without a deadline", 0, true, gateway.LayerUpstream, cfg.RequestTimeout},
		{"less than ε left after the reserve is refused unsent", budget.Reserve + budget.MinRemaining/2, false, gateway.LayerUpstream, budget.Reserve + budget.MinRemaining/2},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tag := "dl" + string(rune('a'+i))
			before := toolCalls(t, b)
			ctx, cancel := context.WithCancel(gateway.WithHopBudget(context.Background(), budget))
			var callerDeadline time.Time
			if tt.deadline > 0 {
				callerDeadline = time.Now().Add(tt.deadline)
				ctx, cancel = context.WithDeadline(gateway.WithHopBudget(context.Background(), budget), callerDeadline)
			}
			defer cancel()
			began := time.Now()
			_, err := b.CallTool(ctx, "slow", json.RawMessage(`{"ms":20000,"tag":"`+tag+`"}`))
			took := time.Since(began)
			ge, _ := errors.AsType[*gateway.Error](err)
			if codeOf(err) != schemas.CodeDeadlineExceeded || ge.Data()["layer"] != tt.wantLayer {
				t.Fatalf("got %v (data %v), want DEADLINE_EXCEEDED at layer %s", err, dataOf(err), tt.wantLayer)
			}
			if took > tt.within+tt.within/2 {
				t.Errorf("returned after %s, want within %s (+50%%)", took, tt.within)
			}
			if !callerDeadline.IsZero() && tt.sent && !time.Now().Before(callerDeadline) {
				t.Errorf("returned after the caller's deadline: the request was not cut at the deadline less the reserve")
			}
			calls := toolCalls(t, b) - before - 1 // less the toolCalls call itself
			if tt.sent {
				if calls != 1 {
					t.Fatalf("the upstream saw %d calls, want 1", calls)
				}
				waitFor(t, 5*time.Second, "the server to see notifications/cancelled", func() bool {
					return strings.Contains(logs.String(), "cancelled "+tag)
				})
				return
			}
			if calls != 0 {
				t.Fatalf("a refused hop reached the upstream (%d calls)", calls)
			}
			if ge.Data()["reserve_ms"] != budget.Reserve.Milliseconds() || ge.Data()["min_remaining_ms"] != budget.MinRemaining.Milliseconds() {
				t.Errorf("data %v: want reserve_ms and min_remaining_ms", ge.Data())
			}
		})
	}
}

// toolCalls counts the tools/call requests the fixture has read (FIXTURE_HOP=1), the one
// asking included.
func toolCalls(t *testing.T, b *mcpbackend.Bridge) int {
	t.Helper()
	return strings.Count("\n"+callText(t, b, "hop_log", `{}`), "\ntools/call")
}

func dataOf(err error) map[string]any {
	if ge, ok := errors.AsType[*gateway.Error](err); ok {
		return ge.Data()
	}
	return nil
}
