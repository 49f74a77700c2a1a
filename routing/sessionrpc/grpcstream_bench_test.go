package sessionrpc_test

import (
	"context"
	"errors"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/sessionrpc"
)

// BenchmarkGRPCStream reads one Count stream of 100 messages from the real demo
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

// BenchmarkGRPCStreamMapping is the mapping alone: frames made per message of an
// in-memory stream (a text delta from a template, a usage event from nested fields, the
// reply's text), without a backend.
func BenchmarkGRPCStreamMapping(b *testing.B) {
	msgs := make([]string, 100)
	for i := range msgs {
		msgs[i] = `{"delta":{"text":"token ","index":` + strconv.Itoa(i) + `},"usage":{"in":12,"out":` + strconv.Itoa(i) + `},"model":"m"}`
	}
	g, err := sessionrpc.NewGRPCStream("chat", sessionrpc.GRPCConfig{
		Method: "chat.stream",
		Events: []sessionrpc.EventRule{
			{Type: "text-delta", Templates: map[string]string{"text": "{delta.text}"}},
			{Type: "usage", Every: 10, Fields: map[string]string{"inputTokens": "usage.in", "outputTokens": "usage.out"}},
		},
		Done: sessionrpc.DoneMapping{Text: true, Fields: map[string]string{"model": "model"}},
	}, &scripted{msgs: msgs})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	ctx := context.Background()
	n := 0
	start := time.Now()
	for b.Loop() {
		res, err := g.Invoke(ctx, &gateway.Call{Method: "session.chat", Params: []byte(`{"message":"hi"}`)})
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
