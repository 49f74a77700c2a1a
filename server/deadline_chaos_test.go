package server

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// slowGRPC is a real gRPC server on loopback whose every method waits for its deadline
// (or cancellation), recording the deadline it was given.
type slowGRPC struct {
	addr  string
	calls atomic.Int32
	seen  chan time.Time
}

func startSlowGRPC(t *testing.T) *slowGRPC {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &slowGRPC{addr: ln.Addr().String(), seen: make(chan time.Time, 16)}
	gs := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		s.calls.Add(1)
		dl, _ := stream.Context().Deadline()
		s.seen <- dl
		<-stream.Context().Done()
		return status.FromContextError(stream.Context().Err()).Err()
	}))
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return s
}

const deadlineChaosConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth: {anonymous: {}}
log: {level: debug}
deadline: {reserve: %s, min_remaining: %s}
routing:
  grpc:
    - name: slow
      address: %q
      descriptors: {protos: {import_paths: [%q], files: [calculator/v1/calculator.proto]}}
      methods: {slow.subtract: calculator.v1.CalculatorService/Subtract}
  mcp:
    direct_zones: [external]
    servers:
      - name: fx
        stdio: {command: %q, env: {FIXTURE_NAME: fx}}
`

// TestChaosSlowBackendDeadline runs calls with a caller deadline (X-Deadline-Ms) against a
// gRPC backend and an MCP stdio tool that take longer than any deadline: each fails with
// DEADLINE_EXCEEDED naming the layer that ran out, the gateway answers within the deadline
// (plus a quarter of it, for a loaded machine), the gRPC backend was sent the caller's
// deadline less the reserve, the MCP tool is cancelled upstream, and a hop with less than ε
// left after the reserve is refused without reaching the backend.
func TestChaosSlowBackendDeadline(t *testing.T) {
	const (
		deadline = 1200 * time.Millisecond
		reserve  = 150 * time.Millisecond
		epsilon  = 50 * time.Millisecond
	)
	backend := startSlowGRPC(t)
	protos, err := filepath.Abs("../schemas/proto")
	if err != nil {
		t.Fatal(err)
	}
	ts := start(t, fmt.Sprintf(deadlineChaosConfig, reserve, epsilon, backend.addr, protos, buildMCPFixture(t)), nil) // the fixture's "slow" tool sleeps
	ts.waitReadyWithin(30 * time.Second)
	tests := []struct {
		name     string
		body     string
		deadline time.Duration
		layer    string
		reached  bool // the gRPC backend's handler ran
		refused  bool // the hop was refused before it was made
	}{
		{"slow gRPC backend", `{"jsonrpc":"2.0","method":"slow.subtract","params":[5,3],"id":1}`, deadline, "backend", true, false},
		{"slow MCP tool", `{"jsonrpc":"2.0","method":"mcp.slow","params":{"ms":30000,"tag":"chaos"},"id":2}`, deadline, "upstream", false, false},
		{"gRPC hop with less than ε after the reserve", `{"jsonrpc":"2.0","method":"slow.subtract","params":[5,3],"id":3}`, reserve + epsilon/2, "backend", false, true},
		{"MCP hop with less than ε after the reserve", `{"jsonrpc":"2.0","method":"mcp.slow","params":{"ms":30000,"tag":"never"},"id":4}`, reserve + epsilon/2, "upstream", false, true},
		{"less than ε at the boundary", `{"jsonrpc":"2.0","method":"slow.subtract","params":[5,3],"id":5}`, epsilon / 2, "boundary", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := backend.calls.Load()
			began := time.Now()
			callerDeadline := began.Add(tt.deadline)
			status, _, body := ts.post(tt.body, "X-Deadline-Ms", strconv.FormatInt(callerDeadline.UnixMilli(), 10))
			took := time.Since(began)
			r := decodeOne(t, body)
			if status != 200 || r.Error == nil || r.Error.Code != -32000 || r.Error.Data["layer"] != tt.layer {
				t.Fatalf("got %d %s, want DEADLINE_EXCEEDED at layer %s", status, body, tt.layer)
			}
			if _, hasReserve := r.Error.Data["reserve_ms"]; hasReserve != tt.refused {
				t.Errorf("data %v: a hop refused for lack of time names the reserve, and only such a hop", r.Error.Data)
			}
			if limit := tt.deadline + tt.deadline/4; took > limit {
				t.Errorf("answered after %s, want within the %s deadline + 25%%", took, tt.deadline)
			}
			if got := backend.calls.Load() - before; (got == 1) != tt.reached {
				t.Fatalf("the gRPC backend ran %d times; want reached=%v", got, tt.reached)
			}
			if tt.reached {
				// gRPC carries a timeout, so the backend's deadline is later by the trip there
				// (allowed: a third of the reserve).
				if dl := <-backend.seen; dl.After(callerDeadline.Add(-reserve + reserve/3)) {
					t.Errorf("the backend's deadline is %s before the caller's, want the reserve %s", callerDeadline.Sub(dl), reserve)
				}
			}
		})
	}
	waitFor(t, func() bool { return strings.Contains(ts.logs.String(), "cancelled chaos") })
	if strings.Contains(ts.logs.String(), "cancelled never") {
		t.Error("an MCP hop refused for lack of time reached the upstream")
	}
}
