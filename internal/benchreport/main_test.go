package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/gatehouse-dev/gatehouse/server
cpu: Test CPU
BenchmarkEndToEnd/gateway-2   	   10000	     20000 ns/op	   3000 B/op	      30 allocs/op
BenchmarkEndToEnd/gateway-2   	   10000	     22000 ns/op	   3000 B/op	      30 allocs/op
BenchmarkEndToEnd/gateway-2   	   10000	     90000 ns/op	   3000 B/op	      30 allocs/op
BenchmarkEndToEnd/nethttp-2   	   10000	     16000 ns/op	   2000 B/op	      20 allocs/op
BenchmarkEndToEnd/nethttp-2   	   10000	     17600 ns/op	   2000 B/op	      20 allocs/op
BenchmarkEndToEnd/nethttp-2   	   10000	     81000 ns/op	   2000 B/op	      20 allocs/op
pkg: github.com/gatehouse-dev/gatehouse/codecs/jsonrpc
BenchmarkDecode/single-2      	 1000000	       500 ns/op	 300.00 MB/s	     64 B/op	       2 allocs/op
BenchmarkStdlibDecode/single-2	 1000000	      2000 ns/op	  75.00 MB/s	    512 B/op	      10 allocs/op
pkg: github.com/gatehouse-dev/gatehouse/routing/capability
BenchmarkDiscoverTokens-2   	  100000	     12000 ns/op	        18.11 L0-tok/cap	         0.09702 L0/tools-list	        46.19 L1-tok/cap	         0.2475 L1/tools-list	       158.1 L2-tok/cap	         0.8467 L2/tools-list	         4.556 compact-tok/cap	         0.02440 compact/tools-list	       186.7 tools-list-tok/cap	    2848 B/op	       4 allocs/op
BenchmarkDiscoverTokens-2   	  100000	     12000 ns/op	        18.11 L0-tok/cap	         0.09800 L0/tools-list	        46.19 L1-tok/cap	         0.2475 L1/tools-list	       158.1 L2-tok/cap	         0.8467 L2/tools-list	         4.556 compact-tok/cap	         0.02440 compact/tools-list	       186.7 tools-list-tok/cap	    2848 B/op	       4 allocs/op
`

func TestReport(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bench.txt")
	out := filepath.Join(dir, "benchmarks.md")
	if err := os.WriteFile(in, []byte(sample), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(in, out); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(out)
	for _, want := range []string{
		"| 0.80 |",      // paired rounds: 16000/20000, 17600/22000, 81000/90000 → median 0.8, as calls/s of gateway ÷ nethttp
		"| 0.25 |",      // 500 / 2000
		"not measured",  // benchmarks absent from the input
		"cpu: Test CPU", // the environment
		"[benchmarks-peers.md](benchmarks-peers.md)", // the pointer to the peers page
		"| codecs/jsonrpc.BenchmarkDecode/single | 1 | 500 | 64 | 2 |",
		"| NEKTE discover L0 tokens ÷ MCP tools/list tokens (" + tokensCatalog + ") | 0.10 | aim ≤ 0.12 |", // metric median
		"| nekte.discover L0, compact shape | 4.6 | aim ≤ 8 |",
		"| MCP tools/list | 186.7 | the baseline |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "benchmarks-ratios.svg"))
	if err != nil || !strings.Contains(string(svg), "<svg") {
		t.Fatalf("plot: %v", err)
	}
}

// TestTLSRows: the TLS rows are calls/s over TLS ÷ plaintext per HTTP version.
func TestTLSRows(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "bench.txt"), filepath.Join(dir, "benchmarks.md")
	bench := `pkg: github.com/gatehouse-dev/gatehouse/server
BenchmarkTLSEndToEnd/http1_tls-2         	    1000	     50000 ns/op
BenchmarkTLSEndToEnd/http1_plaintext-2   	    1000	     40000 ns/op
BenchmarkTLSEndToEnd/h2_tls-2            	    1000	     40000 ns/op
BenchmarkTLSEndToEnd/h2c_plaintext-2     	    1000	     36000 ns/op
`
	if err := os.WriteFile(in, []byte(bench), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(in, out); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(out)
	for _, want := range []string{
		"| JSON-RPC→gRPC calls/s over TLS ÷ plaintext, HTTP/1.1 (connections kept alive) | 0.80 |", // 40000 / 50000
		"| JSON-RPC→gRPC calls/s over TLS ÷ plaintext, HTTP/2 (h2 by ALPN ÷ h2c) | 0.90 |",         // 36000 / 40000
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

func TestTokenSectionAbsent(t *testing.T) {
	res, err := parse(strings.NewReader("pkg: github.com/gatehouse-dev/gatehouse/x\nBenchmarkA-2 1 10 ns/op\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := tokenSection(res); s != "" {
		t.Fatalf("section without the token benchmark: %q", s)
	}
	for _, r := range metricRatios(res) {
		if r.ok {
			t.Fatalf("%s measured", r.def.title)
		}
	}
}

func TestParseRejectsEmpty(t *testing.T) {
	if _, err := parse(strings.NewReader("PASS\n")); err == nil {
		t.Fatal("no results accepted")
	}
}

// TestOverloadRows: the overload figures are read from the metrics the benchmark reports,
// their median over the rounds.
func TestOverloadRows(t *testing.T) {
	res, err := parse(strings.NewReader(`pkg: github.com/gatehouse-dev/gatehouse/server
BenchmarkOverload-2   	       1	         0.97 goodput-1.5x/peak	         0.93 goodput-3x/peak	         2.1 p99-3x/p99-half	       0.031 reject-p99/service	  56326784 B/op	  683766 allocs/op
BenchmarkOverload-2   	       1	         0.99 goodput-1.5x/peak	         0.91 goodput-3x/peak	         1.9 p99-3x/p99-half	       0.020 reject-p99/service	  56326784 B/op	  683766 allocs/op
BenchmarkOverload-2   	       1	         0.95 goodput-1.5x/peak	         0.95 goodput-3x/peak	         2.5 p99-3x/p99-half	       0.500 reject-p99/service	  56326784 B/op	  683766 allocs/op
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"goodput-1.5x/peak": 0.97, "goodput-3x/peak": 0.93, "p99-3x/p99-half": 2.1, "reject-p99/service": 0.031}
	got := map[string]float64{}
	for _, r := range metricRatios(res) {
		for _, d := range metricDefs {
			if r.def.title == d.title && r.ok {
				got[d.unit] = r.value
			}
		}
	}
	for unit, v := range want {
		if got[unit] != v {
			t.Errorf("%s: %v, want the median %v", unit, got[unit], v)
		}
	}
	md := report(res, ratios(res), "x.svg")
	if !strings.Contains(md, "| Overload: goodput at 3× the saturation rate ÷ peak throughput | 0.93 | aim ≥ 0.9 |") {
		t.Errorf("report lacks the overload row:\n%s", md)
	}
}

// TestMCPCPURows: the MCP CPU-per-call figures are the medians of the ratio the
// benchmark reports, per caller count.
func TestMCPCPURows(t *testing.T) {
	res, err := parse(strings.NewReader(`pkg: github.com/gatehouse-dev/gatehouse/server
BenchmarkMCPStreamable/gateway/c1-2    	    3000	    500000 ns/op	    290000 cpu-ns/op	    210000 gateway-cpu-ns/op	         1.10 gateway-cpu/upstream-cpu
BenchmarkMCPStreamable/gateway/c32-2   	    3000	    900000 ns/op	    350000 cpu-ns/op	    290000 gateway-cpu-ns/op	         1.50 gateway-cpu/upstream-cpu
BenchmarkMCPStreamable/gateway/c1-2    	    3000	    500000 ns/op	    290000 cpu-ns/op	    210000 gateway-cpu-ns/op	         1.30 gateway-cpu/upstream-cpu
BenchmarkMCPStreamable/gateway/c32-2   	    3000	    900000 ns/op	    350000 cpu-ns/op	    290000 gateway-cpu-ns/op	         1.70 gateway-cpu/upstream-cpu
BenchmarkMCPStreamable/gateway/c1-2    	    3000	    500000 ns/op	    290000 cpu-ns/op	    210000 gateway-cpu-ns/op	         0.90 gateway-cpu/upstream-cpu
BenchmarkMCPStreamable/gateway/c32-2   	    3000	    900000 ns/op	    350000 cpu-ns/op	    290000 gateway-cpu-ns/op	         1.60 gateway-cpu/upstream-cpu
`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range metricRatios(res) {
		if strings.HasPrefix(r.def.title, "MCP face → streamable HTTP upstream: the gateway's own CPU") && r.ok {
			got[r.def.num] = r.value
		}
	}
	want := map[string]float64{mcpStreamableBench + "/gateway/c1": 1.10, mcpStreamableBench + "/gateway/c32": 1.60}
	for bench, v := range want {
		if got[bench] != v {
			t.Errorf("%s: %v, want the median %v", bench, got[bench], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("rows %v, want %v", got, want)
	}
}

// TestAbsoluteMetricRows: a figure that is not a ratio (bytes per idle WebSocket connection)
// is printed as a whole number with its unit beside its target, and kept out of the plot,
// whose scale is that of the ratios; the ratio the same benchmark reports stays a ratio.
func TestAbsoluteMetricRows(t *testing.T) {
	res, err := parse(strings.NewReader(`pkg: github.com/gatehouse-dev/gatehouse/server
BenchmarkWSIdle-2   	       1	1599506368 ns/op	      6598 B/idle-conn	      3768 stack-B/idle-conn	     14104 tcp-B/idle-conn	         0.4678 ws/tcp
BenchmarkWSIdle-2   	       1	1599506368 ns/op	      6400 B/idle-conn	      3768 stack-B/idle-conn	     14104 tcp-B/idle-conn	         0.4500 ws/tcp
BenchmarkWSIdle-2   	       1	1599506368 ns/op	      9000 B/idle-conn	      3768 stack-B/idle-conn	     14104 tcp-B/idle-conn	         0.6000 ws/tcp
`))
	if err != nil {
		t.Fatal(err)
	}
	rows := ratios(res)
	md := report(res, rows, "x.svg")
	for _, want := range []string{
		"| Idle WebSocket connection: the gateway's Go memory per connection (live heap + goroutine stacks, client in another process) | 6598 B/idle-conn | issue #23 target ≤ 8192 |",
		"| Idle WebSocket connection ÷ an idle bare TCP connection held by net/http, Go memory | 0.47 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	svg := plot(rows)
	if strings.Contains(svg, "6598") || !strings.Contains(svg, "0.47") {
		t.Errorf("the plot should hold the ratio and not the byte figure:\n%s", svg)
	}
	if strings.Count(svg, "<rect") != countMeasured(rows, false) {
		t.Errorf("plot has %d bars, want one per measured ratio (%d)", strings.Count(svg, "<rect"), countMeasured(rows, false))
	}
}

func countMeasured(rows []ratioRow, absolute bool) int {
	n := 0
	for _, r := range rows {
		if r.ok && r.absolute == absolute {
			n++
		}
	}
	return n
}

// TestAllocSection: each stage's added allocations and budget are the medians of what the
// benchmark reports, a stage over its budget is marked, and the whole path's allocations
// per call are listed; without those benchmarks there is no section.
func TestAllocSection(t *testing.T) {
	res, err := parse(strings.NewReader(`pkg: github.com/gatehouse-dev/gatehouse/server
BenchmarkStageAllocs/base-2     	  100	  1000 ns/op	  8.000 budget-allocs	  6.000 stage-allocs	  712 B/op	  6 allocs/op
BenchmarkStageAllocs/base-2     	  100	  1000 ns/op	  8.000 budget-allocs	  5.000 stage-allocs	  712 B/op	  5 allocs/op
BenchmarkStageAllocs/base-2     	  100	  1000 ns/op	  8.000 budget-allocs	  7.000 stage-allocs	  712 B/op	  7 allocs/op
BenchmarkStageAllocs/deadline-2 	  100	  1000 ns/op	  2.000 budget-allocs	  4.000 stage-allocs	  984 B/op	 10 allocs/op
BenchmarkGRPCEndToEnd/gateway-2 	  100	  9000 ns/op	  20000 B/op	  250 allocs/op
BenchmarkGRPCEndToEnd/gateway-2 	  100	  9000 ns/op	  20000 B/op	  270 allocs/op
BenchmarkGRPCEndToEnd/gateway-2 	  100	  9000 ns/op	  20000 B/op	  260 allocs/op
`))
	if err != nil {
		t.Fatal(err)
	}
	md := allocSection(res)
	for _, want := range []string{
		"| base | 6.0 | 8 | 6 |",
		"| deadline | 4.0 (over budget) | 2 | 10 |",
		"| " + wholePathAllocs[0].title + " | 260 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, wholePathAllocs[1].title) {
		t.Errorf("a benchmark that did not run is listed:\n%s", md)
	}
	if !strings.Contains(report(res, ratios(res), "x.svg"), "## Allocations per small call") {
		t.Error("the report lacks the section")
	}
	none, err := parse(strings.NewReader("pkg: github.com/gatehouse-dev/gatehouse/x\nBenchmarkA-2 1 10 ns/op\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := allocSection(none); s != "" {
		t.Errorf("section without the benchmarks: %q", s)
	}
}

// TestAgentRows: the agent link's throughput row is gateway tasks/s ÷ direct tasks/s, its
// latency rows the medians of the ratios and added microseconds the benchmark reports.
func TestAgentRows(t *testing.T) {
	res, err := parse(strings.NewReader(`pkg: github.com/gatehouse-dev/gatehouse/server
BenchmarkAgentDispatch/gateway-2         	   26064	     100000 ns/op
BenchmarkAgentDispatch/direct-2          	   89324	     25000 ns/op
BenchmarkAgentLatency-2                  	       1	3996823831 ns/op	       242.0 added-p50-µs	      2444 added-p99-µs	         2.456 gateway-p50/direct-p50	         3.329 gateway-p99/direct-p99
`))
	if err != nil {
		t.Fatal(err)
	}
	md := report(res, ratios(res), "x.svg")
	for _, want := range []string{
		"driven directly over the agent link's gRPC stream | 0.25 |",
		"p50 latency through the gateway ÷ p50 driven directly | 2.46 |",
		"p99 latency through the gateway ÷ p99 driven directly | 3.33 |",
		"latency the gateway adds at p50 | 242 added-p50-µs |",
		"latency the gateway adds at p99 | 2444 added-p99-µs |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
