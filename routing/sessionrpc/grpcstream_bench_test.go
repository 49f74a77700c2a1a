package sessionrpc_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/sessionrpc"
)

// benchCount is the number of messages of each Count stream the benchmark reads.
const benchCount = 100

// BenchmarkGRPCStream reads one Count stream of benchCount messages from the real demo
// calculator per op: "direct" straight from the gRPC backend (the baseline), "session"
// through GRPCStream with one text-delta per message and the reply's concatenated text.
// frames/s of session ÷ messages/s of direct is the cost of the mapping.
func BenchmarkGRPCStream(b *testing.B) {
	be, _ := startCalculator(b, 0)
	params := []byte(`{"to":100}`)
	payload := []byte(`{"message":"count","options":{"to":100}}`)
	g, err := sessionrpc.NewGRPCStream("count", sessionrpc.GRPCConfig{
		Method:  "calc.count",
		Request: map[string]sessionrpc.RequestField{"from": {Value: 1}, "to": {From: "options.to"}},
		Events:  []sessionrpc.EventRule{{Type: "text-delta", Templates: map[string]string{"text": "{value} "}}},
		Done:    sessionrpc.DoneMapping{Text: true, Fields: map[string]string{"last": "value"}},
	}, be)
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, t gateway.Target, params []byte, method string) {
		b.Helper()
		b.ReportAllocs()
		ctx := context.Background()
		start := time.Now()
		n := 0
		for b.Loop() {
			res, err := t.Invoke(ctx, &gateway.Call{Method: method, Params: params, TraceID: "0123456789abcdef0123456789abcdef"})
			if err != nil {
				b.Fatal(err)
			}
			for {
				_, err := res.Stream.Recv(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			_ = res.Stream.Close()
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "frames/s")
	}
	b.Run("direct", func(b *testing.B) { run(b, be, params, "calc.count") })
	b.Run("session", func(b *testing.B) { run(b, g, payload, "session.count") })
}
