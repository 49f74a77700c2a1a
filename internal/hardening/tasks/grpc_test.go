package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// calcConfig routes the calculator.v1 backend at %s (its streaming Count as calc.count)
// and serves the gRPC face on the internal listener.
const calcConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  internal: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth: {anonymous: {}}
routing:
  grpc:
    - name: calculator
      address: "%s"
      descriptors: {reflection: true}
      services:
        - {service: calculator.v1.CalculatorService, prefix: "calc.", naming: snake}
`

// backend is the calculator, hard-stopped (its connections reset mid-stream) and
// restarted on the same address.
type backend struct {
	addr string
	mu   sync.Mutex
	gs   *grpc.Server
	done chan struct{}
}

func (b *backend) start(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ln, err := net.Listen("tcp", b.addr)
		if err == nil {
			if a := ln.Addr().String(); a != b.addr {
				b.addr = a // the first start only: a restart listens on the same address
			}
			gs, done := demo.NewCalculatorServer(), make(chan struct{})
			go func() { defer close(done); _ = gs.Serve(ln) }()
			b.mu.Lock()
			b.gs, b.done = gs, done
			b.mu.Unlock()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("backend listen %s: %v", b.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reset stops the backend at once: every stream on it is reset.
func (b *backend) reset() {
	b.mu.Lock()
	gs, done := b.gs, b.done
	b.mu.Unlock()
	gs.Stop()
	<-done
}

// window is a span of time during which the backend was down or not yet reached again.
type window struct{ from, to time.Time }

type windows struct {
	mu   sync.Mutex
	list []window
	open *time.Time
}

func (w *windows) begin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.open = &now
}

func (w *windows) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, window{*w.open, time.Now()})
	w.open = nil
}

// overlaps reports whether [from, to] meets a window.
func (w *windows) overlaps(from, to time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.open != nil && to.After(*w.open) {
		return true
	}
	for _, x := range w.list {
		if from.Before(x.to) && to.After(x.from) {
			return true
		}
	}
	return false
}

// typedError checks that err is a gateway error: a gRPC status other than Unknown and
// DeadlineExceeded (nothing may hang), with the gateway's ErrorInfo naming the JSON-RPC
// code, and nothing internal in its message.
func typedError(err error, secrets ...string) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() == codes.Unknown || st.Code() == codes.DeadlineExceeded || st.Code() == codes.OK {
		return fmt.Errorf("not a typed error: %w", err)
	}
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			info = i
		}
	}
	if info == nil || info.GetMetadata()["jsonrpc_code"] == "" {
		return fmt.Errorf("%v: no ErrorInfo with the JSON-RPC code", st)
	}
	if l := hardening.Leaks(st.Message()+info.GetMetadata()["data"], secrets...); len(l) > 0 {
		return fmt.Errorf("%v leaks %q", st, l)
	}
	return nil
}

// countValue reads the value of one calc.count message.
func countValue(msg []byte) (int, error) {
	var m struct {
		Value json.Number `json:"value"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return 0, fmt.Errorf("%s: %w", msg, err)
	}
	n, err := m.Value.Int64()
	return int(n), err
}

// TestGRPCStreamResets runs streaming and unary calls on the gRPC face (InvokeStream of
// the calculator's server-streaming Count, Invoke of Subtract) while clients reset their
// streams mid-way (RST_STREAM by cancelling) and the backend is hard-stopped mid-stream
// and restarted. Model: a call that met no backend outage ends with the exact result; one
// that met one ends with the exact result or a typed error after a prefix of the values;
// a client's reset ends its call with Canceled. A reload runs all the while.
func TestGRPCStreamResets(t *testing.T) {
	be := &backend{addr: "127.0.0.1:0"}
	be.start(t)
	t.Cleanup(be.reset)
	addr := be.addr
	cfg := fmt.Sprintf(calcConfig, addr)
	g := hardening.Start(t, cfg)
	cc, err := grpc.NewClient(g.Internal, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cc.Close() }()
	gw := gatehousev1.NewGatewayServiceClient(cc)
	unary := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := gw.Invoke(ctx, &gatehousev1.InvokeRequest{Method: "calc.subtract", Params: []byte(`{"minuend":5,"subtrahend":3}`)})
		if err != nil {
			return err
		}
		var out struct{ Result float64 }
		if json.Unmarshal(r.GetResult(), &out) != nil || out.Result != 2 {
			return fmt.Errorf("subtract answered %s", r.GetResult())
		}
		return nil
	}
	healed := func() error { // the gateway reaches the backend again
		deadline := time.Now().Add(20 * time.Second)
		for {
			err := unary()
			if err == nil {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the backend is not reached again within 20s: %w", err)
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
	if err := healed(); err != nil {
		t.Fatal(err)
	}
	base := hardening.Take(func() int { return g.State.Len() })
	t.Log(base)

	r, h := seeded(t)
	var tally counts
	runs := hardening.Iterations(t, 4)
	for run := range runs {
		stop := reloader(t, g, cfg)
		var outages windows
		seeds := []uint64{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}
		resetAt := time.Duration(50+r.IntN(300)) * time.Millisecond
		var wg sync.WaitGroup
		wg.Go(func() { // the backend resets once per run, mid-stream
			time.Sleep(resetAt)
			outages.begin()
			be.reset()
			h.addf("backend reset")
			time.Sleep(time.Duration(20+r.IntN(100)) * time.Millisecond)
			be.start(t)
			if err := healed(); err != nil {
				t.Error(err)
			}
			outages.end()
		})
		for w, seed := range seeds {
			wg.Go(func() {
				wr := rand.New(rand.NewPCG(seed, uint64(w)))
				for range 6 {
					if err := grpcOp(wr, gw, &outages, addr, h, &tally); err != nil {
						t.Errorf("run %d: %v\n%s", run, err, h)
						return
					}
				}
			})
		}
		wg.Wait()
		reloads := stop()
		if t.Failed() {
			return
		}
		t.Logf("run %d: %d reloads", run, reloads)
		base.Check(t, 15*time.Second, hardening.Slack{Goroutines: 4, FDs: 4})
	}
	t.Logf("outcomes over %d runs: %s", runs, tally.String())
}

// grpcOp runs one generated call: a whole stream, a stream the client resets after k
// messages, or a unary call, and checks its outcome.
func grpcOp(r *rand.Rand, gw gatehousev1.GatewayServiceClient, outages *windows, backendAddr string, h *history, tally *counts) error {
	kind := []string{"stream", "stream", "reset", "unary"}[r.IntN(4)]
	n, k := 2+r.IntN(7), 1+r.IntN(2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	var got []int
	var err error
	if kind == "unary" {
		var resp *gatehousev1.InvokeResponse
		resp, err = gw.Invoke(ctx, &gatehousev1.InvokeRequest{Method: "calc.subtract", Params: []byte(`{"minuend":5,"subtrahend":3}`)})
		if err == nil {
			var out struct{ Result float64 }
			if json.Unmarshal(resp.GetResult(), &out) != nil || out.Result != 2 {
				return fmt.Errorf("subtract answered %s", resp.GetResult())
			}
		}
	} else {
		var st grpc.ServerStreamingClient[gatehousev1.InvokeStreamResponse]
		st, err = gw.InvokeStream(ctx, &gatehousev1.InvokeStreamRequest{Method: "calc.count",
			Params: fmt.Appendf(nil, `{"from":1,"to":%d,"interval":"0.03s"}`, n)})
		for err == nil {
			var m *gatehousev1.InvokeStreamResponse
			if m, err = st.Recv(); err != nil {
				break
			}
			v, verr := countValue(m.GetMessage())
			if verr != nil {
				return verr
			}
			got = append(got, v)
			if kind == "reset" && len(got) == k {
				cancel() // RST_STREAM mid-stream
			}
		}
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	outage := outages.overlaps(start, time.Now())
	desc := fmt.Sprintf("%s n=%d k=%d → %v %v (outage %v)", kind, n, k, got, status.Code(err), outage)
	h.addf("%s", desc)
	tally.inc(fmt.Sprintf("%s %v", kind, status.Code(err)))
	for i, v := range got { // always a prefix of 1..n, in order
		if v != i+1 || i >= n {
			return fmt.Errorf("%s: not a prefix of 1..%d", desc, n)
		}
	}
	switch {
	case kind == "reset" && len(got) >= k && status.Code(err) == codes.Canceled: // messages already on their way may still arrive
		return nil
	case err == nil:
		if kind != "unary" && len(got) != n {
			return fmt.Errorf("%s: a stream ended without error after %d of %d values", desc, len(got), n)
		}
		return nil
	case !outage:
		return fmt.Errorf("%s: an error with no backend outage: %w", desc, err)
	}
	if terr := typedError(err, backendAddr); terr != nil {
		return fmt.Errorf("%s: %w", desc, terr)
	}
	return nil
}
