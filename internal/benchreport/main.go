// Command benchreport turns `go test -bench` output into docs/benchmarks.md: every figure as a
// ratio against a baseline measured in the same run, with the medians behind it and a plot.
//
//	go run ./internal/benchreport -in .tmp/bench.txt -out docs/benchmarks.md
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	in := flag.String("in", "", "go test -bench output")
	out := flag.String("out", "docs/benchmarks.md", "markdown report to write (a .svg plot is written beside it)")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	res, err := parse(f)
	if err != nil {
		return err
	}
	rows := ratios(res)
	svgName := strings.TrimSuffix(filepath.Base(out), ".md") + "-ratios.svg"
	if err := os.WriteFile(filepath.Join(filepath.Dir(out), svgName), []byte(plot(rows)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(out, []byte(report(res, rows, svgName)), 0o644)
}

// results holds every benchmark's samples and the run's environment lines.
type results struct {
	env     []string
	samples map[string]map[string][]float64 // benchmark → unit → values
	order   []string
}

var procSuffix = regexp.MustCompile(`-\d+$`)

func parse(r io.Reader) (*results, error) {
	res := &results{samples: map[string]map[string][]float64{}}
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "pkg: "):
			pkg = strings.TrimPrefix(line, "pkg: ")
		case strings.HasPrefix(line, "goos: "), strings.HasPrefix(line, "goarch: "), strings.HasPrefix(line, "cpu: "):
			if !slices.Contains(res.env, line) {
				res.env = append(res.env, line)
			}
		case strings.HasPrefix(line, "Benchmark"):
			fields := strings.Fields(line)
			if len(fields) < 4 {
				continue
			}
			name := procSuffix.ReplaceAllString(fields[0], "")
			key := shortPkg(pkg) + "." + name
			if res.samples[key] == nil {
				res.samples[key] = map[string][]float64{}
				res.order = append(res.order, key)
			}
			for i := 2; i+1 < len(fields); i += 2 {
				v, err := strconv.ParseFloat(fields[i], 64)
				if err != nil {
					continue
				}
				res.samples[key][fields[i+1]] = append(res.samples[key][fields[i+1]], v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(res.samples) == 0 {
		return nil, fmt.Errorf("no benchmark results in the input")
	}
	return res, nil
}

func shortPkg(p string) string {
	return strings.TrimPrefix(p, "github.com/gatehouse-dev/gatehouse/")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratioDef defines one reported figure: num ns/op ÷ den ns/op, or its inverse for
// throughput figures (calls/s of A ÷ calls/s of B = ns/op of B ÷ ns/op of A).
type ratioDef struct {
	title      string
	num, den   string
	throughput bool
	meaning    string
}

var defs = []ratioDef{
	{"Agent link: tasks/s through the gateway (JSON-RPC call → agent operator, 4 agents) ÷ the same agents driven directly over the agent link's gRPC stream",
		agentDispatch + "/gateway", agentDispatch + "/direct", true,
		"the HTTP front, pipeline, schema check and hub relative to a bare orchestrator (no auth, limits, heartbeats); same operator, same process placement"},
	{"Session RPC: events/s through the gateway (WebSocket /session → upstream demo-chat over WebSocket) ÷ the same client reading demo-chat directly",
		"server.BenchmarkSessionUpstream/gateway", "server.BenchmarkSessionUpstream/direct", true,
		"issue #17's row: the face (envelope checks, invariants, queue), the pipeline and the upstream relay for one conversation of 200 text deltas"},
	{"Session RPC over a gRPC stream: frames/s through a session route (calc.count mapped onto events) ÷ the same Count stream read straight from its gRPC backend",
		"routing/sessionrpc.BenchmarkGRPCStream/session", "routing/sessionrpc.BenchmarkGRPCStream/direct", true,
		"the mapping's cost: requests built from the payload, each message read by path and written as an event"},
	{"MCP tools/list (2026, 60 tools, a policy hiding some) with the per-caller list cache ÷ without, 1 caller, time",
		"server.BenchmarkMCPListCache/cache/c1", "server.BenchmarkMCPListCache/nocache/c1", false,
		"issue #21's row: the cache skips the policy filtering of every entry; mcp-go still builds and encodes the list"},
	{"… the same, 32 callers, time", "server.BenchmarkMCPListCache/cache/c32", "server.BenchmarkMCPListCache/nocache/c32", false,
		"below 1.0: the cached list is faster"},
	{"MCP tools/call of a 2026-07-28 client through the gateway's MCP face to a 2026-07-28 upstream calls/s ÷ a 2026-07-28 client calling that upstream directly, 1 caller",
		"server.BenchmarkMCPVersions/gateway_2026/c1", "server.BenchmarkMCPVersions/direct_2026/c1", true,
		"issue #21's row: the face, pipeline and bridge on the stateless revision at both ends (streamable HTTP, demo MCP fixture in process)"},
	{"MCP tools/call of a 2026-07-28 client through the gateway to a 2025-11-25 upstream calls/s ÷ a 2025-11-25 client calling that upstream directly, 1 caller",
		"server.BenchmarkMCPVersions/gateway_2025/c1", "server.BenchmarkMCPVersions/direct_2025/c1", true,
		"issue #21's row: the gateway keeps the upstream session for the stateless caller; the direct side is what a client of that server does without the gateway"},
	{"Gateway JSON-RPC calls/s ÷ minimal net/http JSON handler calls/s (subtract, HTTP/1.1, loopback)",
		"server.BenchmarkEndToEnd/gateway", "server.BenchmarkEndToEnd/nethttp", true,
		"1.0 is the ceiling: the same JSON work with no strictness, limits, pipeline or routing"},
	{"Gateway JSON-RPC→gRPC calls/s ÷ direct grpc-go client calls/s (calculator Subtract, same backend)",
		grpcE2E + "/gateway", grpcE2E + "/direct", true,
		"the cost of the JSON-RPC front plus transcoding relative to a native gRPC client"},
	{"… the same with the shipped enforcement (breakers, retries, admission as every shipped configuration has them) ÷ direct grpc-go client calls/s",
		grpcE2E + "/gateway_shipped", grpcE2E + "/direct", true,
		"what a user of the shipped configuration gets; issue #23 target ≥ 0.5"},
	{"JSON-RPC→gRPC calls/s with the shipped enforcement ÷ without",
		grpcE2E + "/gateway_shipped", grpcE2E + "/gateway", true,
		"the price of breakers, the retry budget and admission control per call"},
	{"JSON-RPC→gRPC calls/s over TLS ÷ plaintext, HTTP/1.1 (connections kept alive)",
		"server.BenchmarkTLSEndToEnd/http1_tls", "server.BenchmarkTLSEndToEnd/http1_plaintext", true,
		"the steady-state price of TLS at the boundary once handshakes are amortized"},
	{"JSON-RPC→gRPC calls/s over TLS ÷ plaintext, HTTP/2 (h2 by ALPN ÷ h2c)",
		"server.BenchmarkTLSEndToEnd/h2_tls", "server.BenchmarkTLSEndToEnd/h2c_plaintext", true,
		"the same over one multiplexed HTTP/2 connection"},
	{"JSON-RPC→gRPC calls/s with JWT authentication (RS256 caller, verified-token cache) and a minted EdDSA hop token ÷ anonymous caller, same policy",
		"server.BenchmarkAuthEndToEnd/jwt", "server.BenchmarkAuthEndToEnd/anonymous", true,
		"the price of zero-trust auth per call for a client reusing its token: narrowing its scopes and signing the downstream token"},
	{"… the same with every call's RS256 signature verified (cache disabled) ÷ anonymous caller",
		"server.BenchmarkAuthEndToEnd/jwt_nocache", "server.BenchmarkAuthEndToEnd/anonymous", true,
		"a client presenting a fresh token every call"},
	{"JSON-RPC→gRPC calls/s with tracing (every call sampled, exported over OTLP/gRPC to a collector on loopback) and metrics on ÷ both off",
		"server.BenchmarkTracing/on", "server.BenchmarkTracing/off", true,
		"the price of an ingress and a client span per call, the traceparent on the hop, the batched export and the Prometheus counters and histograms; target ≥ 0.85"},
	{"Three replicas sharing one Redis (round-robin client) calls/s ÷ one replica on the embedded store (subtract with a rate limit and a fresh idempotency key per call)",
		"server.BenchmarkReplicas/redis_3", "server.BenchmarkReplicas/embedded_1", true,
		"the price of shared state: 3 Redis round trips per call (one rate-limit script, the idempotency lock, the record); the replicas share one machine's CPUs here, so this is not the capacity gained by adding machines"},
	{"MCP tools/call through the gateway (JSON-RPC over HTTP → stdio child) calls/s ÷ direct mcp-go client calls/s, 1 caller",
		"server.BenchmarkMCPToolCall/gateway/c1", "server.BenchmarkMCPToolCall/direct/c1", true,
		"the whole gateway path (HTTP, pipeline, bridge) relative to a client speaking MCP to the child itself"},
	{"MCP tools/call through the gateway (JSON-RPC over HTTP → stdio child) calls/s ÷ direct mcp-go client calls/s, 32 callers",
		"server.BenchmarkMCPToolCall/gateway/c32", "server.BenchmarkMCPToolCall/direct/c32", true, ""},
	{"MCP tools/call through the gateway calls/s at 32 callers ÷ at 1 caller (pipelining on one upstream session)",
		"server.BenchmarkMCPToolCall/gateway/c32", "server.BenchmarkMCPToolCall/gateway/c1", true,
		"above 1.0: one upstream session carries concurrent calls"},
	{"MCP tools/call through the gateway's MCP face (streamable HTTP client → gateway → streamable HTTP upstream) calls/s ÷ the same client calling the upstream directly, 1 caller",
		"server.BenchmarkMCPStreamable/gateway/c1", "server.BenchmarkMCPStreamable/direct/c1", true,
		"issue #23's path: the MCP face, pipeline and bridge relative to a client speaking MCP to the upstream itself; target ≥ 0.8"},
	{"MCP tools/call through the gateway's MCP face to a streamable HTTP upstream calls/s ÷ direct, 32 callers",
		"server.BenchmarkMCPStreamable/gateway/c32", "server.BenchmarkMCPStreamable/direct/c32", true, "target ≥ 0.7"},
	{"MCP face → streamable HTTP upstream calls/s at 32 callers with max_idle_conns 64 (the default) ÷ with 2 (http.DefaultTransport's idle connections per host, before #23)",
		"server.BenchmarkMCPStreamable/gateway/c32", "server.BenchmarkMCPStreamable/gateway_idle2/c32", true,
		"above 1.0: the upstream client reuses its connections instead of dialling per call"},
	{"A2A SendMessage (1.0, JSON-RPC) answered by the gateway's A2A face (a NEKTE task on an in-process capability, JWT per call) calls/s ÷ the same client to the @a2a-js/sdk reference server, 1 caller",
		"server.BenchmarkA2ASendMessage/gateway/c1", "server.BenchmarkA2ASendMessage/direct/c1", true,
		"the face alone (auth, pipeline, task record, NEKTE task) relative to the SDK's own server answering at once; the next row is the gateway in front of that server"},
	{"… the same, 32 callers", "server.BenchmarkA2ASendMessage/gateway/c32", "server.BenchmarkA2ASendMessage/direct/c32", true, ""},
	{"A2A SendMessage (1.0, JSON-RPC) through the gateway's A2A face to an @a2a-js/sdk upstream agent (routing.a2a: JWT per call, a NEKTE task, SendMessage upstream with a minted hop token) calls/s ÷ the same client straight to that agent, 1 caller",
		"server.BenchmarkA2AUpstream/gateway/c1", "server.BenchmarkA2AUpstream/direct/c1", true,
		"issue #20's row: the gateway as an A2A proxy, relative to calling the agent itself"},
	{"… the same, 32 callers", "server.BenchmarkA2AUpstream/gateway/c32", "server.BenchmarkA2AUpstream/direct/c32", true, ""},
	{"MCP bridge tools/call calls/s ÷ direct mcp-go client calls/s, 1 caller (stdio child, no HTTP front)",
		"routing/mcpbackend.BenchmarkToolCall/bridge/c1", "routing/mcpbackend.BenchmarkToolCall/direct/c1", true, ""},
	{"MCP bridge tools/call calls/s ÷ direct mcp-go client calls/s, 32 callers (stdio child, no HTTP front)",
		"routing/mcpbackend.BenchmarkToolCall/bridge/c32", "routing/mcpbackend.BenchmarkToolCall/direct/c32", true, ""},
	{"MCP bridge calls/s at 32 callers ÷ at 1 caller (pipelining on one session)",
		"routing/mcpbackend.BenchmarkToolCall/bridge/c32", "routing/mcpbackend.BenchmarkToolCall/bridge/c1", true,
		"above 1.0: one session carries concurrent calls"},
	{"MessagePack → JSON (request) ÷ decode-to-any + json.Marshal, time",
		"codecs/msgpack.BenchmarkToJSON/request/gatehouse", "codecs/msgpack.BenchmarkToJSON/request/baseline", false,
		"below 1.0: the boundary's MessagePack front costs less than the naive conversion"},
	{"MessagePack → JSON (response-sized) ÷ decode-to-any + json.Marshal, time",
		"codecs/msgpack.BenchmarkToJSON/response/gatehouse", "codecs/msgpack.BenchmarkToJSON/response/baseline", false, ""},
	{"JSON → MessagePack (response-sized) ÷ json.Unmarshal-to-any + msgpack.Marshal, time",
		"codecs/msgpack.BenchmarkFromJSON/response/gatehouse", "codecs/msgpack.BenchmarkFromJSON/response/baseline", false, ""},
	{"Gateway MessagePack calls/s ÷ JSON calls/s (subtract, HTTP/1.1, loopback)",
		"server.BenchmarkMsgpackEndToEnd/msgpack", "server.BenchmarkMsgpackEndToEnd/json", true,
		"the cost of transcoding at the face; 1.0: MessagePack costs nothing over JSON"},
	{"NEKTE invoke calls/s ÷ direct JSON-RPC calls/s (demo subtract, invoked with its hash; HTTP/1.1, loopback)",
		"server.BenchmarkNekte/invoke", "server.BenchmarkNekte/subtract", true,
		"the capability layer: lookup, hash check, input schema, levels and cl100k count, then the same call through the pipeline"},
	{"NEKTE discover L0 calls/s ÷ JSON-RPC subtract calls/s (the demo catalog; HTTP/1.1, loopback)",
		"server.BenchmarkNekte/discover_l0", "server.BenchmarkNekte/subtract", true, ""},
	{"cl100k token count (4 KiB JSON) ÷ tiktoken-go encode, time",
		"codecs/nekte.BenchmarkTokens/4KiB", "codecs/nekte.BenchmarkTiktokenGo", false,
		"the same tokens (tested token for token); below 1.0: cheaper per invoke"},
	{"Batch of 10 ÷ 10 single calls (time for 10 calls)",
		"server.BenchmarkBatch/batch10", "server.BenchmarkBatch/single10", false,
		"below 1.0: batching saves round trips"},
	{"Batch of 10: time per member ÷ a single call's time (demo subtract in process, HTTP/1.1, loopback)",
		"server.BenchmarkBatchPerMember/demo/batch10", "server.BenchmarkBatchPerMember/demo/single", false,
		"the gateway's CPU per member call; issue #23 target ≤ 0.35 (jsonrpsee ≈ 0.57)"},
	{"Batch of 100: time per member ÷ a single call's time (demo subtract in process)",
		"server.BenchmarkBatchPerMember/demo/batch100", "server.BenchmarkBatchPerMember/demo/single", false,
		"target ≤ 0.25"},
	{"Batch of 10: time per member ÷ a single call's time (calculator Subtract over gRPC)",
		"server.BenchmarkBatchPerMember/grpc/batch10", "server.BenchmarkBatchPerMember/grpc/single", false,
		"each member is still its own gRPC call to the backend"},
	{"Batch of 100: time per member ÷ a single call's time (calculator Subtract over gRPC)",
		"server.BenchmarkBatchPerMember/grpc/batch100", "server.BenchmarkBatchPerMember/grpc/single", false, ""},
	{"Strict envelope decode ÷ encoding/json Unmarshal (single request), time",
		"codecs/jsonrpc.BenchmarkDecode/single", "codecs/jsonrpc.BenchmarkStdlibDecode/single", false,
		"below 1.0: the strict decoder is faster than the lax standard one"},
	{"Strict envelope decode ÷ encoding/json Unmarshal (batch of 10), time",
		"codecs/jsonrpc.BenchmarkDecode/batch10", "codecs/jsonrpc.BenchmarkStdlibDecode/batch10", false, ""},
	{"Strict envelope decode ÷ encoding/json Unmarshal (reserved params members), time",
		"codecs/jsonrpc.BenchmarkDecode/reserved", "codecs/jsonrpc.BenchmarkStdlibDecode/reserved", false, ""},
	{"Response encode ÷ encoding/json Marshal (result), time",
		"codecs/jsonrpc.BenchmarkEncode/result", "codecs/jsonrpc.BenchmarkStdlibEncode/result", false, ""},
	{"Response encode ÷ encoding/json Marshal (error), time",
		"codecs/jsonrpc.BenchmarkEncode/error", "codecs/jsonrpc.BenchmarkStdlibEncode/error", false, ""},
}

// transcodeDefs are the transcoding rows: plan ÷ protojson with dynamicpb and ÷ protojson on
// generated types, per direction and message size.
var transcodeDefs = func() []ratioDef {
	var out []ratioDef
	for _, dir := range []struct{ bench, label string }{{"JSONToProto", "JSON→protobuf"}, {"ProtoToJSON", "protobuf→JSON"}} {
		for _, size := range []string{"small", "large"} {
			base := "codecs/transcode.Benchmark" + dir.bench + "/" + size + "/"
			out = append(out,
				ratioDef{fmt.Sprintf("Transcode %s (%s) plan ÷ protojson+dynamicpb, time", dir.label, size), base + "plan", base + "dynamicpb", false,
					"target ≤ 0.33 (at least 3× faster)"},
				ratioDef{fmt.Sprintf("Transcode %s (%s) plan ÷ protojson on generated types, time", dir.label, size), base + "plan", base + "generated", false,
					"target ≤ 1.0"})
		}
	}
	return out
}()

// overloadBench is the benchmark that reports the overload figures: a backend of fixed
// service time and concurrency behind the admission stage sized to it.
const overloadBench = "server.BenchmarkOverload"

// mcpStreamableBench is the benchmark of issue #23's MCP path: it reports each process's
// CPU per tools/call beside the times.
const mcpStreamableBench = "server.BenchmarkMCPStreamable"

// grpcE2E is the small JSON-RPC→gRPC call benchmark, whose cases several rows and the
// allocation section read.
const grpcE2E = "server.BenchmarkGRPCEndToEnd"

// metricDefs are figures a benchmark computes as ratios itself and reports with
// b.ReportMetric (the report takes their median over the rounds), beside tokenRatios.
var metricDefs = []metricRatio{
	{"Overload: goodput at 1.5× the saturation rate ÷ peak throughput (open loop; admission sized to the backend)", overloadBench, "goodput-1.5x/peak",
		"aim ≥ 0.9: shedding keeps the backend busy"},
	{"Overload: goodput at 3× the saturation rate ÷ peak throughput", overloadBench, "goodput-3x/peak", "aim ≥ 0.9"},
	{"Overload: admitted calls' p99 latency at 3× ÷ p99 at half load", overloadBench, "p99-3x/p99-half",
		"aim ≤ 3: admitted calls do not queue without bound"},
	{"Overload: p99 latency of a shed call (5002) at 3× ÷ the backend's service time", overloadBench, "reject-p99/service",
		"near 0: refusals are answered at once (aim: under 1 ms)"},
	{"MCP face → streamable HTTP upstream: the gateway's own CPU per tools/call ÷ the upstream server's own, 1 caller", mcpStreamableBench + "/gateway/c1", "gateway-cpu/upstream-cpu",
		"issue #23's target ≤ 0.5; the gateway's share is its process's CPU less the client's (measured by direct in the same run), the upstream's is its child process's"},
	{"MCP face → streamable HTTP upstream: the gateway's own CPU per tools/call ÷ the upstream server's own, 32 callers", mcpStreamableBench + "/gateway/c32", "gateway-cpu/upstream-cpu",
		"target ≤ 0.5"},
	{"Scale-out: Redis round trips per call (three replicas; rate limit + idempotency key)", "server.BenchmarkReplicas/redis_3", "redis-round-trips/call",
		"every state operation is one command or one Lua script: one rate-limit decision, the idempotency lock, the record"},
	{"Agent link at a fixed rate (open loop, 400 tasks/s, 4 agents): p50 latency through the gateway ÷ p50 driven directly", agentLatency, "gateway-p50/direct-p50",
		"the gateway's share of a task's median latency; the added microseconds are the next rows"},
	{"Agent link at a fixed rate: p99 latency through the gateway ÷ p99 driven directly", agentLatency, "gateway-p99/direct-p99",
		"the tail the gateway adds"},
	{"Agent link at a fixed rate: latency the gateway adds at p50", agentLatency, "added-p50-µs", "gateway p50 − direct p50, same run"},
	{"Agent link at a fixed rate: latency the gateway adds at p99", agentLatency, "added-p99-µs", "gateway p99 − direct p99, same run"},
	{"Idle WebSocket connection: the gateway's Go memory per connection (live heap + goroutine stacks, client in another process)", wsIdleBench, "B/idle-conn",
		"issue #23 target ≤ 8192"},
	{"Idle session RPC connection (GET /session, WebSocket): the gateway's Go memory per connection", "server.BenchmarkSessionIdle", "B/idle-session",
		"issue #17's row; the same measurement as the idle /ws row"},
	{"Idle session RPC connection: the gateway's resident memory (RSS) per connection", "server.BenchmarkSessionIdle", "RSS-B/idle-session",
		"what the operating system sees, page granularity included"},
	{"Idle WebSocket connection ÷ an idle bare TCP connection held by net/http, Go memory", wsIdleBench, "ws/tcp",
		"below 1.0: a WebSocket connection costs less than net/http's goroutine and buffers for an idle socket"},
}

// agentDispatch and agentLatency are the agent link's benchmarks: dispatched tasks through
// the gateway and directly over the agent link, closed loop and at a fixed rate.
const (
	agentDispatch = "server.BenchmarkAgentDispatch"
	agentLatency  = "server.BenchmarkAgentLatency"
)

// wsIdleBench is the benchmark that reports what an idle WebSocket connection costs.
const wsIdleBench = "server.BenchmarkWSIdle"

type ratioRow struct {
	def      ratioDef
	value    float64
	ok       bool
	unit     string // an absolute figure's unit
	absolute bool   // value is not a ratio: printed with its unit, not plotted
}

// String formats the row's value.
func (r ratioRow) String() string {
	switch {
	case !r.ok:
		return "not measured"
	case r.absolute:
		return fmt.Sprintf("%.0f %s", r.value, r.unit)
	default:
		return fmt.Sprintf("%.2f", r.value)
	}
}

func ratios(res *results) []ratioRow {
	var rows []ratioRow
	for _, d := range append(slices.Clone(defs), transcodeDefs...) {
		row := ratioRow{def: d}
		if r := pairedRatios(res.samples[d.num]["ns/op"], res.samples[d.den]["ns/op"]); len(r) > 0 {
			row.ok = true
			row.value = median(r)
			if d.throughput {
				row.value = 1 / row.value
			}
		}
		rows = append(rows, row)
	}
	return append(rows, metricRatios(res)...)
}

// pairedRatios divides the i-th sample of num by the i-th of den: make bench runs the suite
// in rounds, so samples with the same index were measured close together in time and a
// load change on the machine affects both. With unequal counts it falls back to the ratio
// of the medians.
func pairedRatios(num, den []float64) []float64 {
	if len(num) == 0 || len(den) == 0 {
		return nil
	}
	if len(num) != len(den) {
		if m := median(den); m > 0 {
			return []float64{median(num) / m}
		}
		return nil
	}
	out := make([]float64, 0, len(num))
	for i := range num {
		if num[i] > 0 && den[i] > 0 {
			out = append(out, num[i]/den[i])
		}
	}
	return out
}

// peersPointer leads to the comparison with the peers users would pick instead, which
// `make bench-peers` writes (bench/peers).
const peersPointer = "Gatehouse beside grpc-gateway and ToolHive vMCP, each its own process on the same backends: " +
	"[benchmarks-peers.md](benchmarks-peers.md) (`make bench-peers`).\n\n"

func report(res *results, rows []ratioRow, svg string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\nWritten by `make bench` on %s. The suite runs in rounds, every benchmark once per round, so the two\n", time.Now().UTC().Format("2006-01-02"))
	b.WriteString("sides of a ratio are measured close together; each figure is the median over the rounds of the ratio within a\n")
	b.WriteString("round, on one machine. Absolute times are listed only to show what the ratios are made of.\n\n")
	b.WriteString(peersPointer)
	for _, e := range res.env {
		fmt.Fprintf(&b, "- %s\n", e)
	}
	b.WriteString("\n## Ratios\n\n| figure | ratio | reading |\n|---|---:|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.def.title, r, r.def.meaning)
	}
	b.WriteString(tokenSection(res))
	b.WriteString(allocSection(res))
	fmt.Fprintf(&b, "\n![ratios](%s)\n\n## Medians\n\n| benchmark | runs | ns/op | B/op | allocs/op |\n|---|---:|---:|---:|---:|\n", svg)
	for _, k := range res.order {
		s := res.samples[k]
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.0f |\n", k, len(s["ns/op"]), median(s["ns/op"]), median(s["B/op"]), median(s["allocs/op"]))
	}
	b.WriteString("\nThe end-to-end figures include the Go HTTP client running in the same process on the same cores\n")
	b.WriteString("for both sides of each ratio, so they compare servers under identical client cost.\n")
	return b.String()
}

// plot draws the ratios as horizontal bars with a line at 1.0; absolute figures are left out.
func plot(all []ratioRow) string {
	rows := slices.DeleteFunc(slices.Clone(all), func(r ratioRow) bool { return r.absolute })
	const (
		left, width, barH, gap = 430, 360, 18, 8
	)
	maxV := 1.0
	for _, r := range rows {
		maxV = max(maxV, r.value)
	}
	scale := float64(width) / (maxV * 1.1)
	height := len(rows)*(barH+gap) + 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", left+width+60, height)
	for i, r := range rows {
		y := 10 + i*(barH+gap)
		label := r.def.title
		if len(label) > 70 {
			label = label[:67] + "…"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-6, y+13, escape(label))
		if r.ok {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%d" fill="#4a7bd0"/>`+"\n", left, y, r.value*scale, barH)
			fmt.Fprintf(&b, `<text x="%.0f" y="%d">%.2f</text>`+"\n", float64(left)+r.value*scale+4, y+13, r.value)
		}
	}
	x1 := float64(left) + scale
	fmt.Fprintf(&b, `<line x1="%.0f" y1="4" x2="%.0f" y2="%d" stroke="#c33" stroke-dasharray="4"/>`+"\n", x1, x1, height-16)
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">1.0</text>`+"\n</svg>\n", x1, height-4)
	return b.String()
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
