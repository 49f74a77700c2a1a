package server

import (
	"fmt"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// BenchmarkTracing compares JSON-RPC→gRPC calls (calculator Subtract) with tracing at 100%
// sampling — an ingress span and a client span per call, the traceparent injected into the
// backend's metadata, batches marshalled and exported over OTLP/gRPC to a collector on
// loopback — and metrics on, with the same calls with both off, in one run. The figure of
// interest is observed calls/s ÷ unobserved calls/s (off ns/op ÷ on ns/op). The collector
// only takes the bytes (a real one runs in a process of its own), so the figure is the
// gateway's cost.
func BenchmarkTracing(b *testing.B) {
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stop() })
	collector := startCollector(b)
	routing := fmt.Sprintf(`
routing:
  grpc:
    - name: calculator
      address: %q
      descriptors: {reflection: true}
      methods: {subtract: calculator.v1.CalculatorService/Subtract}
      unwrap: {subtract: result}
`, addr)
	b.Run("off", func(b *testing.B) {
		url := benchGatewayYAML(b, routing+"metrics: {enabled: false}\n")
		waitBackend(b, url)
		benchPost(b, url, subtractBody, `"result":19`)
	})
	b.Run("on", func(b *testing.B) {
		url := benchGatewayYAML(b, routing+fmt.Sprintf("tracing: {endpoint: %q, insecure: true}\n", collector))
		waitBackend(b, url)
		benchPost(b, url, subtractBody, `"result":19`)
	})
}

// startCollector serves an OTLP/gRPC endpoint on loopback that takes every export's bytes
// without decoding them and answers with an empty ExportTraceServiceResponse (accepted).
func startCollector(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer(grpc.ForceServerCodecV2(discardCodec{}), grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		var n discarded
		if err := stream.RecvMsg(&n); err != nil {
			return err
		}
		return stream.SendMsg(&n)
	}))
	go func() { _ = gs.Serve(ln) }()
	b.Cleanup(gs.Stop)
	return ln.Addr().String()
}

// discarded is a message the collector received: only its size is kept.
type discarded struct{ n int }

// discardCodec reads a message's size and writes an empty message.
type discardCodec struct{}

func (discardCodec) Marshal(any) (mem.BufferSlice, error) { return nil, nil }

func (discardCodec) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*discarded).n = data.Len()
	return nil
}

func (discardCodec) Name() string { return "proto" }
