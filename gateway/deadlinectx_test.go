package gateway_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

type ctxKey string

// closed reports whether ctx's Done channel is closed within wait.
func closed(ctx context.Context, wait time.Duration) bool {
	select {
	case <-ctx.Done():
		return true
	case <-time.After(wait):
		return false
	}
}

// TestCallDeadlineContext: WithCallDeadline behaves as context.WithDeadline whichever way
// it ends and whether or not anything waited on it first; Err and Done agree.
func TestCallDeadlineContext(t *testing.T) {
	tests := []struct {
		name    string
		in      time.Duration             // the call's deadline, from now
		end     func(parent, stop func()) // how it ends (after the context is made)
		waitOn  bool                      // call Done before it ends
		wantErr error
		within  time.Duration
	}{
		{"the deadline passes, waited on", 20 * time.Millisecond, func(_, _ func()) {}, true, context.DeadlineExceeded, time.Second},
		{"the deadline passes, nothing waiting", 5 * time.Millisecond, func(_, _ func()) { time.Sleep(20 * time.Millisecond) }, false, context.DeadlineExceeded, time.Second},
		{"the parent is cancelled, waited on", time.Hour, func(parent, _ func()) { parent() }, true, context.Canceled, time.Second},
		{"the parent is cancelled, nothing waiting", time.Hour, func(parent, _ func()) { parent() }, false, context.Canceled, time.Second},
		{"its CancelFunc runs, waited on", time.Hour, func(_, stop func()) { stop() }, true, context.Canceled, time.Second},
		{"its CancelFunc runs, nothing waiting", time.Hour, func(_, stop func()) { stop() }, false, context.Canceled, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), ctxKey("k"), "v"))
			defer cancelParent()
			dl := time.Now().Add(tt.in)
			ctx, stop := gateway.WithCallDeadline(parent, dl)
			defer stop()
			if got, ok := ctx.Deadline(); !ok || !got.Equal(dl) {
				t.Fatalf("Deadline() = %v, %v; want %v, true", got, ok, dl)
			}
			if got := ctx.Value(ctxKey("k")); got != "v" {
				t.Fatalf("Value = %v, want the parent's", got)
			}
			if err := ctx.Err(); err != nil {
				t.Fatalf("Err() before it ended = %v", err)
			}
			if tt.waitOn && closed(ctx, 0) {
				t.Fatal("Done closed before it ended")
			}
			tt.end(cancelParent, stop)
			if !tt.waitOn {
				// nothing waited: Err reports the end by itself, and Done agrees after
				if err := ctx.Err(); !errors.Is(err, tt.wantErr) {
					t.Fatalf("Err() = %v, want %v", err, tt.wantErr)
				}
			}
			if !closed(ctx, tt.within) {
				t.Fatal("Done not closed")
			}
			if err := ctx.Err(); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Err() = %v, want %v", err, tt.wantErr)
			}
			if err := context.Cause(ctx); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Cause = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestCallDeadlineEarlierParent: a parent that ends first keeps its deadline.
func TestCallDeadlineEarlierParent(t *testing.T) {
	early := time.Now().Add(time.Minute)
	parent, cancel := context.WithDeadline(context.Background(), early)
	defer cancel()
	ctx, stop := gateway.WithCallDeadline(parent, early.Add(time.Hour))
	defer stop()
	if got, _ := ctx.Deadline(); !got.Equal(early) {
		t.Fatalf("Deadline() = %v, want the parent's %v", got, early)
	}
}

// TestCallDeadlineChildren: a context derived from the call's (it waits on it) ends with it.
func TestCallDeadlineChildren(t *testing.T) {
	ctx, stop := gateway.WithCallDeadline(context.Background(), time.Now().Add(time.Hour))
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	stop()
	if !closed(child, time.Second) || !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("child not cancelled with its parent: %v", child.Err())
	}
}

// TestHopDeadline: the hop's context has the hop's deadline, the call's values and the
// cancellation the call inherits, whether it is bounded from the call's parent (nothing
// waited on the call's context) or from the call's context (something did), and ends at
// its own deadline.
func TestHopDeadline(t *testing.T) {
	tests := []struct {
		name    string
		waitOn  bool                                  // something waits on the call's context first
		between func(context.Context) context.Context // what a stage derives between the call and the hop
		end     func(cancelParent, stopCall func())   // what ends it (nil: its own deadline)
		hopIn   time.Duration                         // the hop's deadline, from now
		wantEnd bool
		wantErr error
	}{
		{"its own deadline, nothing waited", false, nil, nil, 20 * time.Millisecond, true, context.DeadlineExceeded},
		{"its own deadline, waited on", true, nil, nil, 20 * time.Millisecond, true, context.DeadlineExceeded},
		{"the request ends, nothing waited", false, nil, func(p, _ func()) { p() }, time.Hour, true, context.Canceled},
		{"the request ends, waited on", true, nil, func(p, _ func()) { p() }, time.Hour, true, context.Canceled},
		{"the call's CancelFunc, waited on", true, nil, func(_, s func()) { s() }, time.Hour, true, context.Canceled},
		{"a stage's own cancellation in between", false, func(ctx context.Context) context.Context {
			c, cancel := context.WithCancel(ctx)
			cancel()
			return c
		}, nil, time.Hour, true, context.Canceled},
		{"detached in between: the request's end does not reach it", false, context.WithoutCancel,
			func(p, _ func()) { p() }, time.Hour, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, cancelReq := context.WithCancel(context.Background())
			defer cancelReq()
			callDl := time.Now().Add(2 * time.Hour)
			call, stop := gateway.WithCallDeadline(req, callDl)
			defer stop()
			if tt.waitOn {
				_ = call.Done()
			}
			ctx := context.WithValue(call, ctxKey("stage"), "set")
			if tt.between != nil {
				ctx = tt.between(ctx)
			}
			hopDl := time.Now().Add(tt.hopIn)
			hop, cancel := gateway.WithHopDeadline(ctx, hopDl)
			defer cancel()
			if got, ok := hop.Deadline(); !ok || !got.Equal(hopDl) {
				t.Fatalf("Deadline() = %v, %v; want %v", got, ok, hopDl)
			}
			if got := hop.Value(ctxKey("stage")); got != "set" {
				t.Fatalf("Value = %v, want the stage's", got)
			}
			if tt.end != nil {
				tt.end(cancelReq, stop)
			}
			if got := closed(hop, 300*time.Millisecond); got != tt.wantEnd {
				t.Fatalf("ended = %v, want %v (Err %v)", got, tt.wantEnd, hop.Err())
			}
			if err := hop.Err(); !errors.Is(err, tt.wantErr) && (err != nil || tt.wantErr != nil) {
				t.Fatalf("Err() = %v, want %v", err, tt.wantErr)
			}
			// the hop's context and its own children end with it, by the context package's
			// own bookkeeping
			child, cc := context.WithCancel(hop)
			defer cc()
			cancel()
			if !closed(child, time.Second) {
				t.Fatal("the hop's child did not end with it")
			}
		})
	}
}

// TestHopDeadlineNoGoroutine: bounding a hop from the call's parent registers it with the
// request's cancellation as context.WithDeadline would, not through a goroutine of its own.
func TestHopDeadlineNoGoroutine(t *testing.T) {
	req := t.Context()
	before := runtime.NumGoroutine()
	var cancels []context.CancelFunc
	for range 50 {
		call, stop := gateway.WithCallDeadline(req, time.Now().Add(time.Hour))
		hop, cancel := gateway.WithHopDeadline(context.WithValue(call, ctxKey("k"), 1), time.Now().Add(30*time.Minute))
		inner, cancelInner := context.WithCancel(hop) // as grpc-go derives its stream's
		cancels = append(cancels, stop, cancel, cancelInner)
		_ = inner.Done()
	}
	if after := runtime.NumGoroutine(); after > before+5 {
		t.Fatalf("goroutines %d → %d: the hop's contexts start goroutines", before, after)
	}
	for _, c := range cancels {
		c()
	}
}
