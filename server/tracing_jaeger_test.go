package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/internal/otelstack"
)

// TestTracingToJaeger exports a call's spans over OTLP/gRPC and OTLP/HTTP to a real Jaeger
// v2 and reads the trace back by the call's X-Trace-Id: the ingress span of service
// gatehouse and the gRPC client span under it.
func TestTracingToJaeger(t *testing.T) {
	j := otelstack.StartJaeger(t)
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	for _, exp := range []struct{ protocol, endpoint string }{
		{"grpc", j.OTLPGRPC},
		{"http", "http://" + j.OTLPHTTP + "/v1/traces"},
	} {
		t.Run(exp.protocol, func(t *testing.T) {
			ts := start(t, fmt.Sprintf(calcConfig, addr)+fmt.Sprintf(
				"tracing: {endpoint: %q, protocol: %s, insecure: true, export_interval: 50ms}\n", exp.endpoint, exp.protocol), nil)
			ts.waitReadyWithin(20 * time.Second)
			_, h, body := ts.post(`{"jsonrpc":"2.0","method":"subtract","params":{"minuend":42,"subtrahend":23},"id":1}`)
			if !strings.Contains(body, `"result":19`) {
				t.Fatal(body)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			spans, err := j.WaitForTrace(ctx, h.Get("X-Trace-Id"), 2)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]otelstack.Span{}
			for _, s := range spans {
				byName[s.Name] = s
			}
			ingress, ok := byName["http subtract"]
			client, ok2 := byName["grpc calculator.v1.CalculatorService/Subtract"]
			if !ok || !ok2 || ingress.Service != "gatehouse" || client.ParentSpanID != ingress.SpanID {
				t.Fatalf("spans in Jaeger: %+v", spans)
			}
		})
	}
}
