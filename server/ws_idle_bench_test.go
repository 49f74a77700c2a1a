package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// idleConnsEnv sets how many idle connections BenchmarkWSIdle opens (default
// defaultIdleConns). Each costs a file descriptor in this process and one in the client's:
// for 10,000, `ulimit -n` must allow somewhat more (Go raises the soft limit to the hard
// one at start), e.g.
//
//	GATEHOUSE_BENCH_IDLE_CONNS=10000 go test -run '^$' -bench WSIdle -benchtime 1x ./server/
const idleConnsEnv = "GATEHOUSE_BENCH_IDLE_CONNS"

const defaultIdleConns = 2000

// BenchmarkWSIdle measures what an idle WebSocket connection costs the gateway: n clients,
// in a separate process (internal/idleclient) so that this process holds only the server's
// half, open a connection each to /ws of a real gateway on loopback and then send nothing
// (they answer pings). Once every connection is open and settled, the growth of the Go
// memory this process holds — live heap objects plus goroutine stacks, after a forced GC
// — divided by n is B/idle-conn (issue #23: ≤ 8192); RSS-B/idle-conn is the growth of the
// resident set, goroutines/idle-conn that of the goroutine count. The baseline is the same
// count of bare TCP connections accepted by a net/http server and held idle (tcp-B/idle-conn);
// ws/tcp is the ratio of the two.
func BenchmarkWSIdle(b *testing.B) {
	n := defaultIdleConns
	if s := os.Getenv(idleConnsEnv); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("%s=%q: want a positive count", idleConnsEnv, s)
		}
		n = v
	}
	bin := filepath.Join(b.TempDir(), "idleclient")
	if out, err := exec.Command("go", "build", "-o", bin, "../internal/idleclient").CombinedOutput(); err != nil {
		b.Fatalf("build idleclient: %v\n%s", err, out)
	}
	b.ResetTimer()
	for range b.N {
		tcp := idleTCP(b, bin, n)
		ws := idleWS(b, bin, n)
		b.ReportMetric(ws.heap, "B/idle-conn")
		b.ReportMetric(ws.stacks, "stack-B/idle-conn")
		b.ReportMetric(ws.rss, "RSS-B/idle-conn")
		b.ReportMetric(ws.goroutines, "goroutines/idle-conn")
		b.ReportMetric(tcp.heap, "tcp-B/idle-conn")
		b.ReportMetric(tcp.goroutines, "tcp-goroutines/idle-conn")
		b.ReportMetric(ws.heap/tcp.heap, "ws/tcp")
	}
}

// idleCost is what one idle connection costs the process that accepted it.
type idleCost struct {
	heap, stacks, rss, goroutines float64
}

// idleWS measures n idle WebSocket connections to a gateway with the websocket section's
// defaults.
func idleWS(b *testing.B, bin string, n int) idleCost {
	b.Helper()
	cfg, err := Parse("bench.yaml", []byte(fmt.Sprintf(`
server: {boundary: {addr: "127.0.0.1:0", max_connections: %d}, admin: {addr: "127.0.0.1:0"}}
log: {level: error}
auth: {anonymous: {}}
routing: {demo: {}}
websocket: {}
`, n+100)))
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
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	url := "ws://" + srv.BoundaryAddr().String() + "/ws"
	return measureIdle(b, bin, n, []string{"-url", url}, func() int { return srv.ws.Open() })
}

// idleTCP measures n bare TCP connections accepted by a net/http server and held idle
// (no request sent: each is net/http's connection goroutine waiting for one).
func idleTCP(b *testing.B, bin string, n int) idleCost {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var open atomic.Int64
	srv := &http.Server{ // no timeouts: the connections are held idle on purpose
		Handler: http.NotFoundHandler(),
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				open.Add(1)
			case http.StateClosed, http.StateHijacked:
				open.Add(-1)
			}
		},
	}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	return measureIdle(b, bin, n, []string{"-tcp", ln.Addr().String()}, func() int { return int(open.Load()) })
}

// measureIdle runs the client bin with args to open n connections, waits until open reports
// them all on the server side and the process settles, and returns the growth per
// connection; it then closes them and waits until the server has let them go.
func measureIdle(b *testing.B, bin string, n int, args []string, open func() int) idleCost {
	b.Helper()
	before := sampleMemory(b)
	cmd := exec.Command(bin, append(args, "-n", strconv.Itoa(n))...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("idleclient: %v\n%s", err, stderr.String())
		}
		waitUntil(b, func() bool { return open() == 0 }, "the server to let the connections go")
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		_ = stdin.Close()
		_ = cmd.Wait()
		b.Fatalf("idleclient did not open %d connections: %q %v\n%s", n, line, err, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	waitUntil(b, func() bool { return open() == n }, "every connection to be open on the server side")
	time.Sleep(500 * time.Millisecond) // goroutines started by the handshake finish
	after := sampleMemory(b)
	return idleCost{
		heap:       float64(after.goMemory-before.goMemory) / float64(n),
		stacks:     float64(after.stacks-before.stacks) / float64(n),
		rss:        float64(after.rss-before.rss) / float64(n),
		goroutines: float64(after.goroutines-before.goroutines) / float64(n),
	}
}

// memorySample is the memory the process holds at one moment, after a forced GC.
type memorySample struct {
	goMemory   int64 // live heap objects + goroutine stacks
	stacks     int64
	rss        int64
	goroutines int
}

var memoryMetrics = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/stacks:bytes"}

func sampleMemory(b *testing.B) memorySample {
	b.Helper()
	goruntime.GC()
	debug.FreeOSMemory() // a second GC, which also frees what the first one's finalizers released; the RSS then counts what is held
	s := make([]metrics.Sample, len(memoryMetrics))
	for i, name := range memoryMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	var m memorySample
	for _, v := range s {
		if v.Value.Kind() != metrics.KindUint64 {
			b.Fatalf("runtime metric %s unsupported", v.Name)
		}
		m.goMemory += int64(v.Value.Uint64())
	}
	m.stacks = int64(s[1].Value.Uint64())
	m.goroutines = goruntime.NumGoroutine()
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		b.Fatalf("RSS: %v", err)
	}
	fields := strings.Fields(string(statm))
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if len(fields) < 2 || err != nil {
		b.Fatalf("RSS: /proc/self/statm %q", statm)
	}
	m.rss = pages * int64(os.Getpagesize())
	return m
}

func waitUntil(b *testing.B, cond func() bool, what string) {
	b.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
