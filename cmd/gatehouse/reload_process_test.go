package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// reloadConfig is a gateway with a real gRPC backend (the demo calculator on its own
// listener, reached over gRPC with reflection) and two stdio MCP upstreams running
// `gatehouse demo-mcp`, demo and other, each started with its own --start-delay.
func reloadConfig(demoDelay, otherDelay string) string {
	return fmt.Sprintf(`auth: {anonymous: {}}
server:
  demo_grpc: {addr: "127.0.0.1:0"}
  watch_config: false
  reload: {ready_timeout: 20s}
routing:
  grpc:
    - name: calculator
      address: "127.0.0.1:0"
      descriptors: {reflection: true}
      services: [{service: calculator.v1.CalculatorService, prefix: "calc.", naming: snake}]
      unwrap: {calc.subtract: result}
  mcp:
    direct_zones: [external, internal]
    servers:
      - name: demo
        stdio: {command: %[1]q, args: [demo-mcp, --start-delay, %[2]s]}
        names: {mode: always}
      - name: other
        stdio: {command: %[1]q, args: [demo-mcp, --start-delay, %[3]s]}
        names: {mode: always}
`, binary, demoDelay, otherDelay)
}

// loadResult is what the callers and the readiness poller of one run saw.
type loadResult struct {
	ok, failed, readyPolls, notReady atomic.Int64
	firstErr                         atomic.Value
}

// underLoad runs 16 callers — 8 calling calc.subtract over gRPC, 8 calling the two MCP
// upstreams' test_simple_text — and a /readyz poller against p while reload runs, then
// stops them. Every call is bounded by the client's timeout.
func underLoad(t *testing.T, p *process, reload func()) *loadResult {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	var r loadResult
	fail := func(err error) {
		r.failed.Add(1)
		r.firstErr.CompareAndSwap(nil, err)
	}
	post := func(body, want string) {
		resp, err := client.Post(p.rpc, "application/json", strings.NewReader(body))
		if err != nil {
			fail(err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			fail(fmt.Errorf("%s → %d %s", body, resp.StatusCode, b))
			return
		}
		r.ok.Add(1)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for ctx.Err() == nil {
				switch i % 4 {
				case 0, 1:
					post(`{"jsonrpc":"2.0","method":"calc.subtract","params":{"minuend":5,"subtrahend":2},"id":1}`, `"result":3`)
				case 2:
					post(`{"jsonrpc":"2.0","method":"mcp.demo__test_simple_text","params":{},"id":1}`, `simple text response`)
				case 3:
					post(`{"jsonrpc":"2.0","method":"mcp.other__test_simple_text","params":{},"id":1}`, `simple text response`)
				}
			}
		})
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			resp, err := client.Get(p.admin + "/readyz")
			r.readyPolls.Add(1)
			if err != nil || resp.StatusCode != http.StatusOK {
				r.notReady.Add(1)
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					r.firstErr.CompareAndSwap(nil, fmt.Errorf("/readyz %d %s", resp.StatusCode, b))
				}
			}
			if resp != nil {
				_ = resp.Body.Close()
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	reload()
	stop()
	wg.Wait()
	return &r
}

// check fails t unless every call succeeded and /readyz never left 200.
func (r *loadResult) check(t *testing.T, reloads int) {
	t.Helper()
	t.Logf("%d calls, %d failed; %d /readyz polls, %d not 200; %d reloads", r.ok.Load(), r.failed.Load(), r.readyPolls.Load(), r.notReady.Load(), reloads)
	if r.failed.Load() > 0 || r.notReady.Load() > 0 {
		t.Fatalf("%d calls failed, /readyz %d times not 200; first: %v", r.failed.Load(), r.notReady.Load(), r.firstErr.Load())
	}
	if r.ok.Load() < 100 {
		t.Fatalf("only %d calls made: the load did not run", r.ok.Load())
	}
}

var startsRE = regexp.MustCompile(`(?m)^gatehouse_upstream_starts_total\{server="([^"]+)"\} (\d+)$`)

// upstreamStarts reads gatehouse_upstream_starts_total by server from p's /metrics: how many
// MCP sessions — child processes, for these stdio upstreams — each upstream started.
func upstreamStarts(t *testing.T, p *process) map[string]int {
	t.Helper()
	resp, err := http.Get(p.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]int{}
	for _, m := range startsRE.FindAllStringSubmatch(string(b), -1) {
		out[m[1]], _ = strconv.Atoi(m[2])
	}
	return out
}

// reloaded waits until p has logged n successful reloads.
func reloaded(t *testing.T, p *process, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(p.stderr.String(), `"msg":"configuration reloaded"`) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d reloads logged, want %d", strings.Count(p.stderr.String(), `"msg":"configuration reloaded"`), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startReloadable writes body to a config file and starts the gateway on it, waiting until
// both MCP upstreams answer.
func startReloadable(t *testing.T, body string) (*process, string) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, cfg)
	waitFor(t, func() bool {
		a, _ := p.call(`{"jsonrpc":"2.0","method":"mcp.demo__test_simple_text","params":{},"id":1}`)
		b, _ := p.call(`{"jsonrpc":"2.0","method":"mcp.other__test_simple_text","params":{},"id":1}`)
		c, _ := p.call(`{"jsonrpc":"2.0","method":"calc.subtract","params":{"minuend":5,"subtrahend":2},"id":1}`)
		return strings.Contains(a, `"result"`) && strings.Contains(b, `"result"`) && strings.Contains(c, `"result":3`)
	})
	return p, cfg
}

// hangups sends p n SIGHUPs, interval apart, and waits until each reload is done.
func hangups(t *testing.T, p *process, n int, interval time.Duration, before func(i int)) {
	t.Helper()
	for i := range n {
		if before != nil {
			before(i)
		}
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		reloaded(t, p, i+1) // SIGHUPs sent while a reload runs would coalesce
		time.Sleep(interval)
	}
}

// TestReloadUnderLoadIsHitless: 30 SIGHUPs 500 ms apart under mixed gRPC and MCP load fail
// no call, keep /readyz at 200, and restart no MCP upstream (the configuration did not
// change, so each is carried over).
func TestReloadUnderLoadIsHitless(t *testing.T) {
	p, _ := startReloadable(t, reloadConfig("0s", "0s"))
	r := underLoad(t, p, func() { hangups(t, p, 30, 500*time.Millisecond, nil) })
	r.check(t, 30)
	if got := upstreamStarts(t, p); got["demo"] != 1 || got["other"] != 1 {
		t.Fatalf("MCP sessions started %v, want each upstream once: a reload restarted an unchanged upstream", got)
	}
}

// TestReloadUnderLoadSlowMCPUpstreams is the same with MCP upstreams that take a second to
// start (as npm servers do).
func TestReloadUnderLoadSlowMCPUpstreams(t *testing.T) {
	p, _ := startReloadable(t, reloadConfig("1s", "1s"))
	r := underLoad(t, p, func() { hangups(t, p, 30, 500*time.Millisecond, nil) })
	r.check(t, 30)
	if got := upstreamStarts(t, p); got["demo"] != 1 || got["other"] != 1 {
		t.Fatalf("MCP sessions started %v, want each upstream once", got)
	}
}

// TestReloadUnderLoadChangingOneUpstream edits one slow-starting upstream's configuration
// before each of 10 SIGHUPs: only that upstream restarts, each time, and the new
// configuration takes traffic once it is up — no call fails, /readyz stays 200.
func TestReloadUnderLoadChangingOneUpstream(t *testing.T) {
	p, cfg := startReloadable(t, reloadConfig("1s", "1s"))
	const edits = 10
	r := underLoad(t, p, func() {
		hangups(t, p, edits, 500*time.Millisecond, func(i int) {
			delay := fmt.Sprintf("%dms", 1001+i) // another configuration of other, as slow
			if err := os.WriteFile(cfg, []byte(reloadConfig("1s", delay)), 0o600); err != nil {
				t.Error(err)
			}
		})
	})
	r.check(t, edits)
	if got := upstreamStarts(t, p); got["demo"] != 1 || got["other"] != 1+edits {
		t.Fatalf("MCP sessions started %v, want demo 1 and other %d: only the changed upstream restarts", got, 1+edits)
	}
}
