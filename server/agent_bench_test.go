package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/gatehouse-dev/gatehouse/demo"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// The agent link's benchmarks: tasks of the demo agents' sha256 operator, dispatched by
// the gateway (a JSON-RPC call over HTTP → the hub → an agent over its gRPC stream) and,
// as the baseline, by a minimal orchestrator that drives the same agents directly over the
// agent link's gRPC stream (handshake, TaskDispatch, the agent's ack and result). Both
// sides run the same four reference agents (package demo) in this process, over loopback.

// benchAgents is how many agents serve each side.
const benchAgents = 4

// agentBenchCall is the JSON-RPC call of one dispatched task.
const agentBenchCall = `{"jsonrpc":"2.0","method":"agent.sha256","params":{"text":"hello"},"id":1}`

// agentBenchInput is the same task's input, as the direct orchestrator sends it.
var agentBenchInput = []byte(`{"text":"hello"}`)

// runBenchAgents runs n reference agents against addr until the benchmark ends.
func runBenchAgents(b *testing.B, addr string, n int) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_ = demo.RunAgent(ctx, demo.AgentOptions{Addr: addr, ID: "bench-" + strconv.Itoa(i), MaxConcurrent: 64,
				Logger: slog.New(slog.DiscardHandler)})
		})
	}
	b.Cleanup(func() { cancel(); wg.Wait() })
}

// benchAgentGateway starts a gateway with the agent link, runs benchAgents agents against
// it, waits until they are connected, and returns its JSON-RPC URL.
func benchAgentGateway(b *testing.B) string {
	b.Helper()
	cfg, err := Parse("bench.yaml", []byte(`
server: {boundary: {addr: "127.0.0.1:0"}, admin: {addr: "127.0.0.1:0"}, internal: {addr: "127.0.0.1:0"}}
log: {level: error}
auth: {anonymous: {}}
agents:
  max_concurrent_tasks: 64
  max_messages_per_second: 1000000
  auth: {allow_loopback_anonymous: true}
`))
	if err != nil {
		b.Fatal(err)
	}
	srv, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	runBenchAgents(b, srv.InternalAddr().String(), benchAgents)
	deadline := time.Now().Add(10 * time.Second)
	for len(srv.agents.Agents()) < benchAgents {
		if time.Now().After(deadline) {
			b.Fatal("the agents did not connect")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return "http://" + srv.BoundaryAddr().String() + "/rpc"
}

// directOrchestrator is the baseline: the orchestrator's side of the agent link and
// nothing else — no authentication, schema checks, limits, heartbeats or pipeline.
type directOrchestrator struct {
	agentlinkv1.UnimplementedAgentLinkServiceServer
	mu     sync.Mutex
	agents []*directAgent
	turn   atomic.Uint64
	seq    atomic.Uint64
}

// directAgent is one connected agent: its stream's sender and the tasks awaiting results.
type directAgent struct {
	send    sync.Mutex
	stream  grpc.BidiStreamingServer[agentlinkv1.ConnectRequest, agentlinkv1.ConnectResponse]
	mu      sync.Mutex
	waiting map[string]chan *agentlinkv1.TaskResult
}

// Connect implements AgentLinkService: welcome the agent, then route its results.
func (o *directOrchestrator) Connect(st grpc.BidiStreamingServer[agentlinkv1.ConnectRequest, agentlinkv1.ConnectResponse]) error {
	first, err := st.Recv()
	if err != nil {
		return err
	}
	if first.GetNodeDescriptor() == nil {
		return fmt.Errorf("no descriptor")
	}
	if err := st.Send(&agentlinkv1.ConnectResponse{Message: &agentlinkv1.ConnectResponse_Welcome{Welcome: &agentlinkv1.Welcome{
		ProtocolVersion: "1.0.0", HeartbeatIntervalMs: 5000, MissedHeartbeats: 3, MaxFrameBytes: 1 << 20,
		MaxConcurrentTasks: 64, SessionId: "direct"}}}); err != nil {
		return err
	}
	a := &directAgent{stream: st, waiting: map[string]chan *agentlinkv1.TaskResult{}}
	o.mu.Lock()
	o.agents = append(o.agents, a)
	o.mu.Unlock()
	for {
		m, err := st.Recv()
		if err != nil {
			return err // the agent went away: the benchmark is over
		}
		if r := m.GetResult(); r != nil {
			a.mu.Lock()
			ch := a.waiting[r.GetTaskId()]
			delete(a.waiting, r.GetTaskId())
			a.mu.Unlock()
			if ch != nil {
				ch <- r
			}
		}
	}
}

// dispatch sends one task to the next agent in turn and waits for its result.
func (o *directOrchestrator) dispatch() error {
	o.mu.Lock()
	a := o.agents[int(o.turn.Add(1))%len(o.agents)]
	o.mu.Unlock()
	id := "t" + strconv.FormatUint(o.seq.Add(1), 10)
	ch := make(chan *agentlinkv1.TaskResult, 1)
	a.mu.Lock()
	a.waiting[id] = ch
	a.mu.Unlock()
	a.send.Lock()
	err := a.stream.Send(&agentlinkv1.ConnectResponse{Message: &agentlinkv1.ConnectResponse_Dispatch{Dispatch: &agentlinkv1.TaskDispatch{
		TaskId: id, JobId: "bench", Operator: "sha256", InputJson: agentBenchInput, TimeoutMs: 10000}}})
	a.send.Unlock()
	if err != nil {
		return err
	}
	select {
	case r := <-ch:
		if r.GetStatus() != agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED {
			return fmt.Errorf("task %s: %v %s", id, r.GetStatus(), r.GetDiagnostics())
		}
		return nil
	case <-time.After(loadCallTimeout):
		return fmt.Errorf("task %s: no result", id)
	}
}

// startDirect serves the direct orchestrator on a loopback listener, runs benchAgents
// agents against it and waits until they are connected.
func startDirect(b *testing.B) *directOrchestrator {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	o := &directOrchestrator{}
	gs := grpc.NewServer()
	agentlinkv1.RegisterAgentLinkServiceServer(gs, o)
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(ln) }()
	b.Cleanup(func() { gs.Stop(); <-done })
	runBenchAgents(b, ln.Addr().String(), benchAgents)
	deadline := time.Now().Add(10 * time.Second)
	for {
		o.mu.Lock()
		n := len(o.agents)
		o.mu.Unlock()
		if n == benchAgents {
			return o
		}
		if time.Now().After(deadline) {
			b.Fatal("the agents did not connect to the direct orchestrator")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gatewayTask posts one dispatched task to the gateway and checks its result.
func gatewayTask(c *http.Client, url string) error {
	resp, err := c.Post(url, "application/json", strings.NewReader(agentBenchCall))
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	if !bytes.Contains(body, []byte(`"sha256":"2cf24dba`)) {
		return fmt.Errorf("unexpected answer %s", body)
	}
	return nil
}

func benchHTTPClient() *http.Client {
	return &http.Client{Timeout: loadCallTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}}
}

// BenchmarkAgentDispatch: tasks per second to 4 agents, through the gateway (JSON-RPC
// over HTTP → agent) and driven directly over the agent link by a minimal orchestrator.
// Callers in parallel: GOMAXPROCS × 8, so the agents stay busy on either side.
func BenchmarkAgentDispatch(b *testing.B) {
	b.Run("gateway", func(b *testing.B) {
		url := benchAgentGateway(b)
		c := benchHTTPClient()
		defer c.CloseIdleConnections()
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := gatewayTask(c, url); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("direct", func(b *testing.B) {
		o := startDirect(b)
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := o.dispatch(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// agentLatencyRate and agentLatencyPhase are the open-loop latency run: tasks per second,
// and how long each side is driven at that rate.
const (
	agentLatencyRate  = 400.0
	agentLatencyPhase = 2 * time.Second
)

// openLoopLatencies runs call at rate per second for d — each on its own goroutine at its
// scheduled time, whether or not earlier ones have answered — and returns the latencies.
func openLoopLatencies(b *testing.B, rate float64, d time.Duration, call func() error) []time.Duration {
	n := int(rate * d.Seconds())
	lat := make([]time.Duration, n)
	var failed atomic.Int64
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range n {
		if wait := time.Until(begin.Add(time.Duration(float64(i) / rate * float64(time.Second)))); wait > 0 {
			time.Sleep(wait)
		}
		wg.Go(func() {
			start := time.Now()
			if err := call(); err != nil {
				failed.Add(1)
			}
			lat[i] = time.Since(start)
		})
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d tasks failed", f, n)
	}
	slices.Sort(lat)
	return lat
}

func quantile(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(int(p*float64(len(sorted))), len(sorted)-1)]
}

// BenchmarkAgentLatency: each task's latency at a fixed rate (open loop, 400 tasks/s for
// 2 s per side, well under either side's capacity), through the gateway and driven
// directly: the latency the gateway adds at p50 and p99, as ratios and in microseconds.
// One iteration is one run of both sides.
func BenchmarkAgentLatency(b *testing.B) {
	url := benchAgentGateway(b)
	o := startDirect(b)
	c := benchHTTPClient()
	defer c.CloseIdleConnections()
	for range 50 { // warm both paths: connections, pools
		if err := gatewayTask(c, url); err != nil {
			b.Fatal(err)
		}
		if err := o.dispatch(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var gw50, gw99, d50, d99 time.Duration
	for range b.N {
		gw := openLoopLatencies(b, agentLatencyRate, agentLatencyPhase, func() error { return gatewayTask(c, url) })
		direct := openLoopLatencies(b, agentLatencyRate, agentLatencyPhase, o.dispatch)
		gw50, gw99 = gw50+quantile(gw, 0.5), gw99+quantile(gw, 0.99)
		d50, d99 = d50+quantile(direct, 0.5), d99+quantile(direct, 0.99)
	}
	n := time.Duration(b.N)
	gw50, gw99, d50, d99 = gw50/n, gw99/n, d50/n, d99/n
	b.ReportMetric(float64(gw50)/float64(d50), "gateway-p50/direct-p50")
	b.ReportMetric(float64(gw99)/float64(d99), "gateway-p99/direct-p99")
	b.ReportMetric(float64((gw50 - d50).Microseconds()), "added-p50-µs")
	b.ReportMetric(float64((gw99 - d99).Microseconds()), "added-p99-µs")
}
