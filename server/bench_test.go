package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gatehouse-dev/gatehouse/configs"
	"github.com/gatehouse-dev/gatehouse/demo"
	calculatorv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/calculator/v1"
)

// The end-to-end benchmarks measure calls through a real loopback HTTP/1.1 connection. The
// baseline is a minimal net/http handler doing the same JSON work (decode the request,
// subtract, encode the response) without strictness, limits, pipeline or routing: the
// physical ceiling of an HTTP/1.1 JSON front on this machine. The figure of interest is
// baseline ns/op ÷ gateway ns/op (the gateway's calls/s as a fraction of the ceiling).

const subtractBody = `{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`

func BenchmarkEndToEnd(b *testing.B) {
	b.Run("gateway", func(b *testing.B) {
		url := benchGateway(b)
		benchPost(b, url, subtractBody, `"result":19`)
	})
	b.Run("nethttp", func(b *testing.B) {
		url := benchBaseline(b)
		benchPost(b, url, subtractBody, `"result":19`)
	})
}

// BenchmarkBatch compares one batch of 10 calls with 10 single calls (one op = 10 calls).
func BenchmarkBatch(b *testing.B) {
	url := benchGateway(b)
	parts := make([]string, 10)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":%d}`, i)
	}
	b.Run("batch10", func(b *testing.B) {
		benchPost(b, url, "["+strings.Join(parts, ",")+"]", `"result":19`)
	})
	b.Run("single10", func(b *testing.B) {
		client := benchClient()
		b.ReportAllocs()
		b.SetParallelism(benchParallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				for _, p := range parts {
					if err := post(client, url, p, `"result":19`); err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
	})
}

func benchGateway(b *testing.B) string {
	b.Helper()
	return benchGatewayYAML(b, "routing: {demo: {}}\n")
}

// benchGatewayYAML starts a gateway on loopback with routing (and anything else) from extra.
func benchGatewayYAML(b *testing.B, extra string) string {
	b.Helper()
	return benchGatewayConfig(b, "auth: {anonymous: {}}\n"+extra)
}

// benchGatewayConfig starts a gateway on loopback with every section but server and log
// from yaml, and returns its JSON-RPC URL.
func benchGatewayConfig(b *testing.B, yaml string) string {
	b.Helper()
	cfg, err := Parse("bench.yaml", []byte(`
server: {boundary: {addr: "127.0.0.1:0"}, admin: {addr: "127.0.0.1:0"}}
log: {level: error}
`+yaml))
	if err != nil {
		b.Fatal(err)
	}
	return benchServe(b, cfg, Options{Logger: slog.New(slog.DiscardHandler)})
}

// benchServe runs a gateway of cfg with opts until the benchmark ends and returns its
// JSON-RPC URL.
func benchServe(b *testing.B, cfg *Config, opts Options) string {
	b.Helper()
	srv, err := New(cfg, opts)
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
	return "http://" + srv.BoundaryAddr().String() + "/rpc"
}

// benchBaseline starts the minimal net/http JSON-RPC handler.
func benchBaseline(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			JSONRPC string          `json:"jsonrpc"`
			Method  string          `json:"method"`
			Params  []float64       `json:"params"`
			ID      json.RawMessage `json:"id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Params) != 2 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		out, _ := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			Result  float64         `json:"result"`
			ID      json.RawMessage `json:"id"`
		}{"2.0", req.Params[0] - req.Params[1], req.ID})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/rpc"
}

func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}}
}

// benchParallelism is how many callers per CPU the throughput benchmarks run: enough calls
// in flight to measure calls/s rather than the latency of one round trip.
const benchParallelism = 16

// benchPost measures calls of body to url; header is name, value pairs sent with each.
func benchPost(b *testing.B, url, body, want string, header ...string) {
	b.Helper()
	client := benchClient()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := post(client, url, body, want, header...); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

var errUnexpected = errors.New("unexpected response")

func post(client *http.Client, url, body, want string, header ...string) error {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	out, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	if !bytes.Contains(out, []byte(want)) {
		return fmt.Errorf("%w: %s", errUnexpected, out)
	}
	return nil
}

// BenchmarkGRPCEndToEnd compares a JSON-RPC call transcoded to gRPC through the gateway with
// a direct grpc-go client call of the same method on the same calculator backend. The
// figure of interest is gateway calls/s ÷ direct calls/s (direct ns/op ÷ gateway ns/op).
func BenchmarkGRPCEndToEnd(b *testing.B) {
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stop() })

	routes := fmt.Sprintf(`
routing:
  grpc:
    - name: calculator
      address: %q
      descriptors: {reflection: true}
      methods: {subtract: calculator.v1.CalculatorService/Subtract}
      unwrap: {subtract: result}
`, addr)
	b.Run("gateway", func(b *testing.B) {
		url := benchGatewayYAML(b, routes)
		waitBackend(b, url)
		benchPost(b, url, subtractBody, `"result":19`)
	})
	// The same call with the enforcement every shipped configuration turns on (breakers,
	// retries, admission: the default's sections verbatim), metrics on as everywhere.
	b.Run("gateway_shipped", func(b *testing.B) {
		shipped, err := configs.Sections("breakers", "retries", "admission")
		if err != nil {
			b.Fatal(err)
		}
		url := benchGatewayYAML(b, routes+shipped)
		waitBackend(b, url)
		benchPost(b, url, subtractBody, `"result":19`)
	})
	b.Run("direct", func(b *testing.B) {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = conn.Close() }()
		client := calculatorv1.NewCalculatorServiceClient(conn)
		b.ReportAllocs()
		b.SetParallelism(benchParallelism)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				r, err := client.Subtract(context.Background(), &calculatorv1.SubtractRequest{Minuend: 42, Subtrahend: 23})
				if err != nil || r.GetResult() != 19 {
					b.Error(r, err)
					return
				}
			}
		})
	})
}
