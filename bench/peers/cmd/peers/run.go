package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/bench/peers/measure"
	"github.com/gatehouse-dev/gatehouse/bench/peers/report"
)

type options struct {
	rounds       int
	duration     time.Duration
	callers      []int
	rates        []float64
	modes        []string
	maxInFlight  int
	gatehouse    string
	gatehouseB   string // a second Gatehouse binary measured beside the first (A/B of two builds), empty: none
	vmcp         string
	vmcpVersion  string
	tmp          string
	out, img     string
	jsonOut      string
	bodies       []string // JSON→gRPC bodies to run (bodySmall, body4K)
	mcp          bool     // run the MCP rows
	profile      string   // directory for CPU profiles of the fronts, one per closed-loop round; empty: none
	wireLog      bool     // the MCP upstream logs what it receives (mcpup -wire-log)
	mcpVersions  string   // Gatehouse's protocol_versions for the MCP upstream; empty: its default
	mcpVersionsB string   // the same for Gatehouse B
}

func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for f := range strings.SplitSeq(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	var o options
	var callers, rates, modes, bodies string
	fs.IntVar(&o.rounds, "rounds", 3, "rounds per scenario (interleaved); figures are their medians")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "length of one round of one scenario")
	fs.StringVar(&callers, "callers", "32,1", "closed-loop caller counts")
	fs.StringVar(&rates, "rates", "0.2,0.5", "open-loop rates, as fractions of direct gRPC's closed-loop capacity")
	fs.StringVar(&modes, "modes", "pinned,unpinned", "placements: pinned (servers on CPU 0, load on CPU 1), unpinned")
	fs.IntVar(&o.maxInFlight, "max-in-flight", 256, "open loop: most calls outstanding; beyond, calls are dropped and counted")
	fs.StringVar(&o.gatehouse, "gatehouse", ".tmp/bin/gatehouse-bench", "the gatehouse binary")
	fs.StringVar(&o.gatehouseB, "gatehouse-b", "", "a second gatehouse binary, measured in the same rounds as \"Gatehouse B\" on the JSON→gRPC and MCP rows "+
		"(A/B of two builds on a noisy machine: compare the two rows of each round); empty: none")
	fs.StringVar(&o.vmcp, "vmcp", "", "ToolHive's vmcp binary (empty or missing: the vMCP rows are skipped, and the page says why)")
	fs.StringVar(&o.vmcpVersion, "vmcp-version", "", "ToolHive version, for the page")
	fs.StringVar(&o.tmp, "tmp", ".tmp/peers", "working directory for configurations and logs")
	fs.StringVar(&o.out, "out", "docs/benchmarks-peers.md", "the page to write")
	fs.StringVar(&o.img, "img", "docs/img", "directory of the charts")
	fs.StringVar(&o.jsonOut, "json", ".tmp/peers/results.json", "raw results")
	fs.StringVar(&bodies, "bodies", "small,4k", "JSON→gRPC bodies to run: small, 4k (empty: none)")
	fs.BoolVar(&o.mcp, "mcp", true, "run the MCP tools/call rows")
	fs.StringVar(&o.mcpVersions, "gatehouse-mcp-versions", "", "comma-separated MCP revisions Gatehouse offers the upstream (its protocol_versions); empty: Gatehouse's default")
	fs.StringVar(&o.mcpVersionsB, "gatehouse-b-mcp-versions", "", "-gatehouse-mcp-versions for Gatehouse B (empty: the same as Gatehouse's)")
	fs.BoolVar(&o.wireLog, "wire-log", false, "the MCP upstream counts and logs the requests it receives (its log: <tmp>/mcpup-<mode>.log; costs it CPU)")
	fs.StringVar(&o.profile, "profile", "", "write CPU profiles of Gatehouse, grpc-gateway, the gRPC backend and the MCP upstream over each closed-loop round into this directory "+
		"(the profiling costs the fronts CPU: do not publish the figures of such a run)")
	_ = fs.Parse(args)
	var err error
	if o.callers, err = parseList(callers, strconv.Atoi); err != nil {
		return fmt.Errorf("-callers: %w", err)
	}
	if rates != "" {
		if o.rates, err = parseList(rates, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
			return fmt.Errorf("-rates: %w", err)
		}
	}
	for b := range strings.SplitSeq(bodies, ",") {
		switch strings.TrimSpace(b) {
		case "small":
			o.bodies = append(o.bodies, bodySmall)
		case "4k":
			o.bodies = append(o.bodies, body4K)
		case "":
		default:
			return fmt.Errorf("-bodies: unknown body %q (small, 4k)", b)
		}
	}
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o750); err != nil {
			return err
		}
	}
	o.modes = strings.Split(modes, ",")
	if err := os.MkdirAll(o.tmp, 0o750); err != nil {
		return err
	}
	r := report.Run{Date: time.Now(), Machine: machine(), Rounds: o.rounds, Duration: o.duration, Versions: versions(o)}
	if o.vmcp == "" {
		r.Notes = append(r.Notes, "ToolHive vMCP: no binary given (-vmcp).")
	} else if _, err := os.Stat(o.vmcp); err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("ToolHive vMCP: %s did not build here (%v); see `make bench-peers` output.", o.vmcp, err))
		o.vmcp = ""
	}
	for _, mode := range o.modes {
		m, notes, err := runMode(o, mode)
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		r.Modes = append(r.Modes, m)
		r.Notes = append(r.Notes, notes...)
	}
	if b, err := json.MarshalIndent(r, "", "  "); err == nil {
		_ = os.WriteFile(o.jsonOut, b, 0o644)
	}
	return r.WriteFiles(o.out, o.img)
}

// render writes the page and charts again from the raw results of a run.
func render(args []string) error {
	fs := flag.NewFlagSet("render", flag.ExitOnError)
	in := fs.String("json", ".tmp/peers/results.json", "raw results of a run")
	out := fs.String("out", "docs/benchmarks-peers.md", "the page to write")
	img := fs.String("img", "docs/img", "directory of the charts")
	_ = fs.Parse(args)
	b, err := os.ReadFile(*in)
	if err != nil {
		return err
	}
	var r report.Run
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	return r.WriteFiles(*out, *img)
}

func machine() report.Machine {
	m := report.Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		_ = f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return m
}

func versions(o options) [][2]string {
	v := [][2]string{{"Gatehouse", "this checkout (`./cmd/gatehouse`)"}}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/grpc-ecosystem/grpc-gateway/v2":
				v = append(v, [2]string{"grpc-gateway", d.Version})
			case "google.golang.org/grpc":
				v = append(v, [2]string{"grpc-go (backend, grpc-gateway, load generator)", d.Version})
			case "github.com/mark3labs/mcp-go":
				v = append(v, [2]string{"mcp-go (MCP upstream)", d.Version})
			}
		}
	}
	if o.vmcpVersion != "" {
		v = append(v, [2]string{"ToolHive vMCP", o.vmcpVersion})
	}
	return v
}

// scenario is one measured thing: a call through one front.
type scenario struct {
	key      report.Row // Kind, Front, Body, Callers, RateFrac
	call     measure.CallFunc
	front    *proc // nil for direct
	backend  *proc
	samples  []sample
	directOf string // open loop: the body whose direct capacity sets the rate
	pprof    string // base URL of the front's /debug/pprof/, for -profile
	bpprof   string // the backend's, for -profile
}

type sample struct {
	rate, target                  float64
	frontCPU, backendCPU, loadCPU time.Duration
	p50, p99                      time.Duration
	errors, dropped               int64
	firstErr                      error
}

func cpu(p *proc) time.Duration {
	if p == nil {
		return 0
	}
	d, _ := measure.ProcessCPU(p.pid())
	return d
}

// measureOnce runs s once (closed loop, or open loop at rate when rate > 0).
func (s *scenario) measureOnce(ctx context.Context, o options, rate float64) {
	self, _ := measure.ProcessCPU(os.Getpid())
	f0, b0 := cpu(s.front), cpu(s.backend)
	var smp sample
	var calls int64
	var profiled chan struct{}
	if o.profile != "" && rate == 0 {
		profiled = make(chan struct{})
		name := fmt.Sprintf("%s-%s-%s-%d-r%d", s.key.Front, s.key.Body, s.key.Kind, s.key.Callers, len(s.samples)+1)
		name = strings.NewReplacer(" ", "", "/", "_").Replace(name)
		seconds := max(1, int(o.duration/time.Second))
		go func() {
			defer close(profiled)
			var wg sync.WaitGroup
			for _, p := range [][2]string{{s.pprof, name + ".pprof"}, {s.bpprof, name + "-backend.pprof"}} {
				if p[0] == "" {
					continue
				}
				wg.Go(func() {
					if err := fetchProfile(p[0], seconds, filepath.Join(o.profile, p[1])); err != nil {
						fmt.Println("profile:", err)
					}
				})
			}
			wg.Wait()
		}()
	}
	if rate > 0 {
		r := measure.OpenLoop(ctx, rate, o.duration, o.maxInFlight, s.call)
		calls = int64(len(r.Latencies))
		smp = sample{rate: r.AchievedRate(), target: rate, p50: measure.Percentile(r.Latencies, 50),
			p99: measure.Percentile(r.Latencies, 99), errors: r.Errors, dropped: r.Dropped, firstErr: r.FirstErr}
	} else {
		r := measure.ClosedLoop(ctx, s.key.Callers, o.duration, s.call)
		calls = r.Calls
		smp = sample{rate: r.Rate(), errors: r.Errors, firstErr: r.FirstErr}
	}
	self1, _ := measure.ProcessCPU(os.Getpid())
	f1, b1 := cpu(s.front), cpu(s.backend)
	if profiled != nil {
		<-profiled
	}
	if calls > 0 {
		smp.frontCPU = (f1 - f0) / time.Duration(calls)
		smp.backendCPU = (b1 - b0) / time.Duration(calls)
		smp.loadCPU = (self1 - self) / time.Duration(calls)
	}
	s.samples = append(s.samples, smp)
}

func medianDur(xs []time.Duration) time.Duration {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return time.Duration(measure.Median(f))
}

func (s *scenario) row() report.Row {
	r := s.key
	var rates, targets []float64
	var fc, bc, lc, p50, p99 []time.Duration
	for _, m := range s.samples {
		rates, targets = append(rates, m.rate), append(targets, m.target)
		fc, bc, lc = append(fc, m.frontCPU), append(bc, m.backendCPU), append(lc, m.loadCPU)
		p50, p99 = append(p50, m.p50), append(p99, m.p99)
		r.Errors += m.errors
		r.Dropped += m.dropped
		if m.firstErr != nil && r.FirstErr == "" {
			r.FirstErr = m.firstErr.Error()
		}
	}
	r.Rate, r.Target = measure.Median(rates), measure.Median(targets)
	r.FrontCPU, r.BackendCPU, r.LoadCPU = medianDur(fc), medianDur(bc), medianDur(lc)
	r.P50, r.P99 = medianDur(p50), medianDur(p99)
	return r
}

const (
	frontGatehouse  = "Gatehouse"
	frontGatehouseB = "Gatehouse B"
	frontGW         = "grpc-gateway"
	frontFloor      = "floor: net/http + grpc-go"
	frontVMCP       = "ToolHive vMCP"
	bodySmall       = "small"
	body4K          = "4 KB"
	body100         = "100 B"
)

// smallRequest is the small call's JSON-RPC request (Gatehouse and the floor).
const smallRequest = `{"jsonrpc":"2.0","method":"calc.subtract","params":[42,23],"id":1}`

// flagAddr is the listen address flag of the benchmark's own servers.
const flagAddr = "-addr"

func runMode(o options, mode string) (report.Mode, []string, error) {
	ctx := context.Background()
	var serverCPUs string
	m := report.Mode{Name: mode}
	switch mode {
	case "pinned":
		serverCPUs = "0"
		m.Desc = "Every server on CPU 0, the load generator on CPU 1."
		if err := pinSelf("1"); err != nil {
			return m, nil, err
		}
	case "unpinned":
		m.Desc = "No affinity: the scheduler places every process on either core."
		if err := pinSelf(fmt.Sprintf("0-%d", runtime.NumCPU()-1)); err != nil {
			return m, nil, err
		}
	default:
		return m, nil, fmt.Errorf("unknown mode %q", mode)
	}
	self, err := os.Executable()
	if err != nil {
		return m, nil, err
	}
	addrs, err := freeAddrs(13)
	if err != nil {
		return m, nil, err
	}
	ghBAddr, ghBAdmin := addrs[8], addrs[9]
	backendAddr, upAddr, ghAddr, ghAdmin, gwAddr, vmcpAddr, gwPprof := addrs[0], addrs[1], addrs[2], addrs[3], addrs[4], addrs[5], addrs[6]
	backendPprof, upPprof := addrs[7], addrs[10]
	floorAddr, floorPprof := addrs[11], addrs[12]
	backendArgs := []string{"backend", flagAddr, backendAddr}
	upArgs := []string{"mcpup", flagAddr, upAddr}
	if o.profile != "" {
		backendArgs = append(backendArgs, "-pprof", backendPprof)
		upArgs = append(upArgs, "-pprof", upPprof)
	} else {
		backendPprof, upPprof = "", ""
	}
	if o.wireLog {
		upArgs = append(upArgs, "-wire-log")
	}
	var procs []*proc
	defer func() {
		for _, p := range slices.Backward(procs) {
			p.stop()
		}
	}()
	start := func(name string, ready func() error, bin string, args ...string) (*proc, error) {
		p, err := startProc(name+"-"+mode, o.tmp, serverCPUs, nil, bin, args...)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
		return p, p.waitReady(ready)
	}
	backend, err := start("backend", dialCheck(backendAddr), self, backendArgs...)
	if err != nil {
		return m, nil, err
	}
	upstream, err := start("mcpup", dialCheck(upAddr), self, upArgs...)
	if err != nil {
		return m, nil, err
	}
	ghConf := filepath.Join(o.tmp, "gatehouse-"+mode+".yaml")
	if err := os.WriteFile(ghConf, []byte(gatehouseConfig(ghAddr, ghAdmin, backendAddr, upAddr, o.mcpVersions)), 0o644); err != nil {
		return m, nil, err
	}
	ghArgs := []string{"serve", "--config", ghConf}
	gwArgs := []string{"grpcgw", flagAddr, gwAddr, "-backend", backendAddr}
	if o.profile != "" {
		ghArgs = append(ghArgs, "--pprof")
		gwArgs = append(gwArgs, "-pprof", gwPprof)
	}
	gh, err := start("gatehouse", httpCheck("http://"+ghAdmin+"/readyz"), o.gatehouse, ghArgs...)
	if err != nil {
		return m, nil, err
	}
	var ghB *proc
	if o.gatehouseB != "" {
		conf := filepath.Join(o.tmp, "gatehouse-b-"+mode+".yaml")
		if err := os.WriteFile(conf, []byte(gatehouseConfig(ghBAddr, ghBAdmin, backendAddr, upAddr, cmp.Or(o.mcpVersionsB, o.mcpVersions))), 0o644); err != nil {
			return m, nil, err
		}
		args := []string{"serve", "--config", conf}
		if o.profile != "" {
			args = append(args, "--pprof")
		}
		if ghB, err = start("gatehouse-b", httpCheck("http://"+ghBAdmin+"/readyz"), o.gatehouseB, args...); err != nil {
			return m, nil, err
		}
	}
	gw, err := start("grpcgw", dialCheck(gwAddr), self, gwArgs...)
	if err != nil {
		return m, nil, err
	}
	floorArgs := []string{"floor", flagAddr, floorAddr, "-backend", backendAddr, "-body", smallRequest}
	if o.profile != "" {
		floorArgs = append(floorArgs, "-pprof", floorPprof)
	}
	floor, err := start("floor", dialCheck(floorAddr), self, floorArgs...)
	if err != nil {
		return m, nil, err
	}
	var notes []string
	var vmcp *proc
	if o.vmcp != "" {
		conf := filepath.Join(o.tmp, "vmcp-"+mode+".yaml")
		host, port, _ := strings.Cut(vmcpAddr, ":")
		if err := os.WriteFile(conf, []byte(vmcpConfig(upAddr)), 0o644); err != nil {
			return m, nil, err
		}
		vmcp, err = start("vmcp", httpCheck("http://"+vmcpAddr+"/health"), o.vmcp, "serve", "--config", conf, "--host", host, "--port", port)
		if err != nil {
			notes = append(notes, fmt.Sprintf("ToolHive vMCP (%s) did not start: %v", mode, err))
			vmcp = nil
		}
	}

	// Targets, each checked once against the expected answer.
	doc := echoDoc()
	docJSON, err := json.Marshal(doc)
	if err != nil {
		return m, nil, err
	}
	g, err := newGRPCTargets(backendAddr)
	if err != nil {
		return m, nil, err
	}
	defer func() { _ = g.conn.Close() }()
	if err := g.subtract(ctx, 0); err != nil {
		return m, nil, fmt.Errorf("direct subtract: %w", err)
	}
	if err := g.echoCall(ctx, 0); err != nil {
		return m, nil, fmt.Errorf("direct echo: %w", err)
	}
	httpClient := newHTTPClient(o.maxInFlight + 64)
	mk := func(url, body string, check func([]byte) error) (*httpTarget, error) {
		t := &httpTarget{client: httpClient, url: url, body: []byte(body)}
		return t, t.prime(ctx, check)
	}
	pprofOf := map[*proc]string{gh: "http://" + ghAdmin, gw: "http://" + gwPprof, floor: "http://" + floorPprof}
	if ghB != nil {
		pprofOf[ghB] = "http://" + ghBAdmin
	}
	bpprofOf := map[*proc]string{}
	if backendPprof != "" {
		bpprofOf[backend] = "http://" + backendPprof
	}
	if upPprof != "" {
		bpprofOf[upstream] = "http://" + upPprof
	}
	ghSmall, err := mk("http://"+ghAddr+"/rpc", smallRequest, checkSubtract(true))
	if err != nil {
		return m, nil, err
	}
	floorSmall, err := mk("http://"+floorAddr+"/", smallRequest, checkSubtract(true))
	if err != nil {
		return m, nil, err
	}
	ghEcho, err := mk("http://"+ghAddr+"/rpc", `{"jsonrpc":"2.0","method":"bench.echo","params":{"doc":`+string(docJSON)+`},"id":1}`, checkEcho(true, doc))
	if err != nil {
		return m, nil, err
	}
	gwSmall, err := mk("http://"+gwAddr+"/calculator.v1.CalculatorService/Subtract", `{"minuend":42,"subtrahend":23}`, checkSubtract(false))
	if err != nil {
		return m, nil, err
	}
	gwEcho, err := mk("http://"+gwAddr+"/benchecho.v1.EchoService/Echo", `{"doc":`+string(docJSON)+`}`, checkEcho(false, doc))
	if err != nil {
		return m, nil, err
	}
	fmt.Printf("%s: 4 KB body: %d bytes of JSON (Gatehouse request %d bytes)\n", mode, len(gwEcho.body), len(ghEcho.body))
	var ghBSmall, ghBEcho *httpTarget
	if ghB != nil {
		if ghBSmall, err = mk("http://"+ghBAddr+"/rpc", string(ghSmall.body), checkSubtract(true)); err != nil {
			return m, nil, err
		}
		if ghBEcho, err = mk("http://"+ghBAddr+"/rpc", string(ghEcho.body), checkEcho(true, doc)); err != nil {
			return m, nil, err
		}
	}

	var scenarios []*scenario
	add := func(kind, front, body string, callers int, call measure.CallFunc, fp, bp *proc) {
		scenarios = append(scenarios, &scenario{key: report.Row{Kind: kind, Front: front, Body: body, Callers: callers},
			call: call, front: fp, backend: bp, pprof: pprofOf[fp], bpprof: bpprofOf[bp]})
	}
	for _, body := range o.bodies {
		for _, n := range o.callers {
			if body == bodySmall {
				add(report.KindClosed, report.Direct, body, n, g.subtract, nil, backend)
				add(report.KindClosed, frontGatehouse, body, n, ghSmall.call, gh, backend)
				if ghB != nil {
					add(report.KindClosed, frontGatehouseB, body, n, ghBSmall.call, ghB, backend)
				}
				add(report.KindClosed, frontGW, body, n, gwSmall.call, gw, backend)
				add(report.KindClosed, frontFloor, body, n, floorSmall.call, floor, backend)
			} else {
				add(report.KindClosed, report.Direct, body, n, g.echoCall, nil, backend)
				add(report.KindClosed, frontGatehouse, body, n, ghEcho.call, gh, backend)
				if ghB != nil {
					add(report.KindClosed, frontGatehouseB, body, n, ghBEcho.call, ghB, backend)
				}
				add(report.KindClosed, frontGW, body, n, gwEcho.call, gw, backend)
			}
		}
	}
	var mcpTargets []*mcpTarget
	defer func() {
		for _, t := range mcpTargets {
			t.close(ctx)
		}
	}()
	for _, n := range o.callers {
		if !o.mcp {
			break
		}
		fronts := []struct {
			name string
			url  string
			p    *proc
		}{{report.Direct, "http://" + upAddr + "/mcp", nil}, {frontGatehouse, "http://" + ghAddr + "/mcp", gh}}
		if ghB != nil {
			fronts = append(fronts, struct {
				name string
				url  string
				p    *proc
			}{frontGatehouseB, "http://" + ghBAddr + "/mcp", ghB})
		}
		if vmcp != nil {
			fronts = append(fronts, struct {
				name string
				url  string
				p    *proc
			}{frontVMCP, "http://" + vmcpAddr + "/mcp", vmcp})
		}
		for _, f := range fronts {
			t, err := newMCPTarget(ctx, f.url, n)
			if err != nil {
				if f.p == vmcp && vmcp != nil {
					notes = append(notes, fmt.Sprintf("ToolHive vMCP (%s, %d callers): %v", mode, n, err))
					continue
				}
				return m, nil, fmt.Errorf("MCP %s: %w", f.name, err)
			}
			mcpTargets = append(mcpTargets, t)
			add(report.KindMCP, f.name, body100, n, t.call, f.p, upstream)
		}
	}

	// Warm-up (not recorded), then the closed-loop rounds, interleaved.
	for _, s := range scenarios {
		measure.ClosedLoop(ctx, s.key.Callers, min(o.duration/5, time.Second), s.call)
	}
	for round := range o.rounds {
		for _, s := range scenarios {
			s.measureOnce(ctx, o, 0)
			l := s.samples[len(s.samples)-1]
			fmt.Printf("%s round %d: %-6s %-13s %-5s %2d callers: %8.0f calls/s, CPU/call front %v backend %v load %v, errors %d\n",
				mode, round+1, s.key.Kind, s.key.Front, s.key.Body, s.key.Callers, l.rate, l.frontCPU, l.backendCPU, l.loadCPU, l.errors)
		}
	}

	// Open loop at fractions of direct gRPC's capacity at the largest caller count.
	capacity := map[string]float64{}
	maxCallers := 0
	for _, n := range o.callers {
		maxCallers = max(maxCallers, n)
	}
	for _, s := range scenarios {
		if s.key.Kind == report.KindClosed && s.key.Front == report.Direct && s.key.Callers == maxCallers {
			capacity[s.key.Body] = s.row().Rate
		}
	}
	var open []*scenario
	for _, body := range o.bodies {
		for _, frac := range o.rates {
			for _, s := range scenarios {
				if s.key.Kind == report.KindClosed && s.key.Body == body && s.key.Callers == maxCallers {
					k := s.key
					k.Kind, k.Callers, k.RateFrac = report.KindOpen, 0, frac
					open = append(open, &scenario{key: k, call: s.call, front: s.front, backend: s.backend, directOf: body})
				}
			}
		}
	}
	for round := range o.rounds {
		for _, s := range open {
			rate := s.key.RateFrac * capacity[s.directOf]
			if rate <= 0 {
				continue
			}
			s.measureOnce(ctx, o, rate)
			l := s.samples[len(s.samples)-1]
			fmt.Printf("%s round %d: open %-13s %-5s %.0f/s: achieved %.0f/s, p50 %v p99 %v, dropped %d errors %d\n",
				mode, round+1, s.key.Front, s.key.Body, rate, l.rate, l.p50, l.p99, l.dropped, l.errors)
		}
	}
	for _, s := range append(scenarios, open...) {
		if len(s.samples) > 0 {
			m.Rows = append(m.Rows, s.row())
		}
	}
	for _, p := range procs {
		if err := p.exited(); err != nil {
			return m, notes, errors.New("a server exited during the run: " + err.Error())
		}
	}
	return m, notes, nil
}

// gatehouseConfig is the minimal production-like configuration: anonymous callers from
// loopback, metrics on, no tracing, the calculator and the echo service over gRPC (descriptors
// by reflection), the MCP upstream bridged and served again at /mcp.
func gatehouseConfig(boundary, admin, backend, upstream, mcpVersions string) string {
	versions := ""
	if mcpVersions != "" {
		versions = "\n        protocol_versions: [" + mcpVersions + "]"
	}
	return fmt.Sprintf(`server:
  boundary: {addr: %s}
  admin: {addr: %s}
  watch_config: false
mcp_face: {}
auth:
  anonymous: {loopback_only: true, tier: standard}
metrics: {enabled: true}
routing:
  grpc:
    - name: bench
      address: %s
      descriptors: {reflection: true}
      services:
        - {service: calculator.v1.CalculatorService, prefix: "calc.", naming: snake}
        - {service: benchecho.v1.EchoService, prefix: "bench.", naming: snake}
      unwrap: {calc.subtract: result}
  mcp:
    servers:
      - name: up
        http: {url: "http://%s/mcp"}%s
log:
  level: warn
  format: json
`, boundary, admin, backend, upstream, versions)
}

// vmcpConfig is ToolHive vMCP in static mode: one backend, the same upstream, anonymous
// callers, no outgoing credentials.
func vmcpConfig(upstream string) string {
	return fmt.Sprintf(`name: bench
groupRef: bench
backends:
  - name: up
    url: http://%s/mcp
    transport: streamable-http
incomingAuth:
  type: anonymous
outgoingAuth:
  source: inline
  default:
    type: unauthenticated
aggregation:
  conflictResolution: prefix
  conflictResolutionConfig:
    prefixFormat: "{workload}_"
`, upstream)
}

// fetchProfile writes a CPU profile of seconds from the front's /debug/pprof/ at base to path.
func fetchProfile(base string, seconds int, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+30)*time.Second)
	defer cancel()
	url := base + "/debug/pprof/profile?seconds=" + strconv.Itoa(seconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
