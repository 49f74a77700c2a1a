package grpcbackend_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/internal/chaostest"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestHopDeadlineLayers: the backend is sent the call's deadline less the reserve
// (deadline.reserve from the hop budget, or the backend's own deadline_reserve); a hop
// left with less than ε after the reserve is refused without reaching the backend; and a
// DEADLINE_EXCEEDED names the layer that ran out — backend when the request reached it
// (its handler was slow, or it answered DEADLINE_EXCEEDED itself), gateway when the
// gateway was still waiting for a connection.
func TestHopDeadlineLayers(t *testing.T) {
	const unit = 400 * time.Millisecond
	var calls atomic.Int32
	seen := make(chan time.Time, 16)
	slow := serveScripted(t, func(_ any, stream grpc.ServerStream) error {
		calls.Add(1)
		dl, _ := stream.Context().Deadline()
		seen <- dl
		<-stream.Context().Done()
		return status.FromContextError(stream.Context().Err()).Err()
	})
	refusing := serveScripted(t, func(any, grpc.ServerStream) error {
		return status.Error(codes.DeadlineExceeded, "my own backend ran out")
	})
	budget := gateway.HopBudget{Reserve: unit / 4, MinRemaining: unit / 8}
	tests := []struct {
		name     string
		addr     string
		reserve  time.Duration // the backend's deadline_reserve
		deadline time.Duration
		layer    string
		reached  bool // the backend's handler ran
		// wire is "yes", "no" or "either": a slow backend's own DeadlineExceeded status
		// races the gateway's context, both expiring at the hop deadline.
		wire string
	}{
		{"slow backend: layer backend", slow, 0, 2 * unit, gateway.LayerBackend, true, "either"},
		{"backend's own deadline_reserve overrides the budget's", slow, unit / 2, 2 * unit, gateway.LayerBackend, true, "either"},
		{"backend answers DEADLINE_EXCEEDED: layer backend", refusing, 0, 2 * unit, gateway.LayerBackend, false, "yes"},
		{"no connection yet: layer gateway", chaostest.SilentListener(t), 0, 2 * unit, gateway.LayerGateway, false, "no"},
		{"less than ε after the reserve: refused unsent", slow, 0, budget.Reserve + budget.MinRemaining/2, gateway.LayerBackend, false, "no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t, grpcbackend.Config{Name: "b", Address: tt.addr, Descriptors: protosSource(),
				Methods: map[string]string{"subtract": calc + "/Subtract"}, DeadlineReserve: tt.reserve})
			waitLoaded(t, b)
			before := calls.Load()
			callerDeadline := time.Now().Add(tt.deadline)
			ctx, cancel := context.WithDeadline(gateway.WithHopBudget(context.Background(), budget), callerDeadline)
			defer cancel()
			_, err := b.Invoke(ctx, &gateway.Call{Method: "subtract", Params: []byte(`[1,2]`)})
			returned := time.Now()
			ge := gateway.AsError(err)
			wireOK := tt.wire == "either" || (ge != nil && ge.IsWire() == (tt.wire == "yes"))
			if ge == nil || ge.Code() != schemas.CodeDeadlineExceeded || ge.Data()["layer"] != tt.layer || !wireOK {
				t.Fatalf("got %v (data %v, wire %v); want DEADLINE_EXCEEDED at layer %s", err, dataOf(ge), ge != nil && ge.IsWire(), tt.layer)
			}
			if !returned.Before(callerDeadline) {
				t.Errorf("returned %s after the caller's deadline", returned.Sub(callerDeadline))
			}
			if got := calls.Load() - before; (got == 1) != tt.reached {
				t.Fatalf("the backend's handler ran %d times; want reached=%v", got, tt.reached)
			}
			if !tt.reached {
				return
			}
			reserve := budget.Reserve
			if tt.reserve > 0 {
				reserve = tt.reserve
			}
			// gRPC sends a timeout, not an instant: the backend's deadline counts from when the
			// request reached it, so it is later by the trip there (allowed: a quarter reserve).
			if dl := <-seen; dl.After(callerDeadline.Add(-reserve + reserve/4)) {
				t.Errorf("the backend's deadline is %s before the caller's, want about the reserve %s", callerDeadline.Sub(dl), reserve)
			}
		})
	}
}

// TestStreamReadBoundedByTheDeadline: a server-streaming call whose backend stops sending
// ends at the deadline less the reserve with DEADLINE_EXCEEDED at layer backend, and a
// reader that gives up (its context ends) cancels the RPC at once.
func TestStreamReadBoundedByTheDeadline(t *testing.T) {
	addr := serveCalculator(t)
	b := newBackend(t, grpcbackend.Config{Name: "calc", Address: addr, Descriptors: protosSource(),
		Services: []grpcbackend.ServiceConfig{{Service: calc, Prefix: "calc."}}})
	waitLoaded(t, b)
	budget := gateway.HopBudget{Reserve: 100 * time.Millisecond, MinRemaining: 50 * time.Millisecond}
	slowCount := []byte(`{"to": 3, "interval": "10s"}`) // the first value at once, then one per 10s
	t.Run("the backend's silence", func(t *testing.T) {
		callerDeadline := time.Now().Add(800 * time.Millisecond)
		ctx, cancel := context.WithDeadline(gateway.WithHopBudget(context.Background(), budget), callerDeadline)
		defer cancel()
		res, err := b.Invoke(ctx, &gateway.Call{Method: "calc.count", Params: slowCount})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = res.Stream.Close() }()
		if _, err := res.Stream.Recv(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, err = res.Stream.Recv(context.Background())
		if ge := gateway.AsError(err); ge == nil || ge.Code() != schemas.CodeDeadlineExceeded || ge.Data()["layer"] != gateway.LayerBackend {
			t.Fatalf("got %v (data %v); want DEADLINE_EXCEEDED at layer backend", err, dataOf(ge))
		}
		if !time.Now().Before(callerDeadline) {
			t.Error("the read outlived the caller's deadline")
		}
	})
	t.Run("the reader gives up", func(t *testing.T) {
		res, err := b.Invoke(context.Background(), &gateway.Call{Method: "calc.count", Params: slowCount})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = res.Stream.Close() }()
		if _, err := res.Stream.Recv(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err = res.Stream.Recv(ctx) // the backend's next value is 10s away
		if ge := gateway.AsError(err); ge == nil || ge.Code() != schemas.CodeCancelled {
			t.Fatalf("got %v; want CANCELLED once the reader's context ended", err)
		}
	})
}

func dataOf(e *gateway.Error) map[string]any {
	if e == nil {
		return nil
	}
	return e.Data()
}
