package nekte_test

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestDelegatedTaskBoundedByTheCallersDeadline: a delegated task's running time is lowered
// to the time left before the deadline its caller named, less the hop reserve, so the task
// (and the stream the gateway relays) ends before the caller's deadline; the configured
// default deadline, which the caller did not name, leaves the task's timeout alone; a
// delegation with less than ε left after the reserve is refused before a task exists.
func TestDelegatedTaskBoundedByTheCallersDeadline(t *testing.T) {
	const unit = 200 * time.Millisecond
	e := newEnv(t)
	b := newBlocker(`{}`)
	b.progress = false
	e.capability("wait", b.run)
	cfg := fastTasks()
	cfg.Tasks.DefaultTimeout, cfg.Tasks.MaxTimeout = 5*unit, 5*unit
	s := e.service(cfg)
	budget := gateway.HopBudget{Reserve: unit / 2, MinRemaining: unit / 4}
	timedOutAfter := regexp.MustCompile(`Task timed out: t-\w+ after (\d+) ms`)
	tests := []struct {
		name     string
		deadline time.Duration // from now
		named    bool          // the caller named the deadline
		refused  bool
		// the task's timeout, in (lo, hi] ms
		lo, hi int64
	}{
		{"a later caller deadline leaves the timeout", 10 * unit, true, false, 5*unit.Milliseconds() - 1, 5 * unit.Milliseconds()},
		{"an earlier caller deadline lowers it", 3 * unit, true, false, (2*unit - budget.Reserve).Milliseconds(), (3*unit - budget.Reserve).Milliseconds()},
		{"the default deadline does not bound a task", unit / 2, false, false, 5*unit.Milliseconds() - 1, 5 * unit.Milliseconds()},
		{"less than ε after the reserve is refused", budget.Reserve + budget.MinRemaining/2, true, true, 0, 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "t-" + strconv.Itoa(i)
			callerDeadline := time.Now().Add(tt.deadline)
			ctx := gateway.WithHopBudget(context.Background(), budget)
			if tt.named {
				ctx = gateway.WithCallerDeadline(ctx, callerDeadline)
			}
			ctx, cancel := context.WithDeadline(ctx, callerDeadline)
			res, err := s.Invoke(ctx, &gateway.Call{Method: nekte.MethodDelegate, Principal: gateway.Principal{Subject: "a"},
				Params: []byte(`{"task":{"id":"` + id + `","desc":"","timeout_ms":100000,"cap":"wait"}}`)})
			cancel()
			if tt.refused {
				ge := wantCode(t, err, schemas.CodeDeadlineExceeded)
				if ge.Data()["layer"] != gateway.LayerTask {
					t.Fatalf("data %v, want layer task", ge.Data())
				}
				_, err := call(t, s, "a", nekte.MethodTaskStatus, `{"task_id":"`+id+`"}`)
				wantCode(t, err, schemas.CodeTaskNotFound)
				return
			}
			evs := openStream(t)(res, err).rest()
			ended := time.Now()
			last := evs[len(evs)-1]
			m := timedOutAfter.FindStringSubmatch(string(last.Data))
			if last.Event != nekte.EventError || m == nil {
				t.Fatalf("last event %s %s, want a task timeout", last.Event, last.Data)
			}
			if ms, _ := strconv.ParseInt(m[1], 10, 64); ms <= tt.lo || ms > tt.hi {
				t.Fatalf("timed out after %d ms, want in (%d, %d]", ms, tt.lo, tt.hi)
			}
			if tt.named && tt.deadline < 5*unit && !ended.Before(callerDeadline) {
				t.Errorf("the task's stream ended %s after the caller's deadline", ended.Sub(callerDeadline))
			}
			if cause := waitFor(t, b.stopped, "the capability call to be cancelled"); cause == nil {
				t.Error("the capability call was not cancelled")
			}
		})
	}
}
