package grpcbackend_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
)

// TestClientSpans: each RPC of a traced call is a client span under the call's span with
// the method's attributes and its status code — a unary RPC, a stream read to its end, a
// stream failing, and a stream its reader closes early (which has no status code).
func TestClientSpans(t *testing.T) {
	addr := serveCalculator(t)
	b := newBackend(t, grpcbackend.Config{Name: "calc", Address: addr, Descriptors: grpcbackend.DescriptorsConfig{Reflection: true},
		Services: []grpcbackend.ServiceConfig{{Service: calc, Prefix: "calc."}}})
	waitLoaded(t, b)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	readAll := func(s gateway.Stream, ctx context.Context) error {
		for {
			if _, err := s.Recv(ctx); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	}
	tests := []struct {
		name, method, params string
		read                 func(gateway.Stream, context.Context) error
		wantName             string
		wantCode             string // rpc.grpc.status_code, "" for none
		wantErr              bool
	}{
		{"unary", "calc.subtract", `{"minuend": 3, "subtrahend": 1}`, nil, "grpc calculator.v1.CalculatorService/Subtract", "0", false},
		{"stream read to its end", "calc.count", `{"to": 2}`, readAll, "grpc calculator.v1.CalculatorService/Count", "0", false},
		{"stream failing", "calc.count", `{"from": 5, "to": 1}`, readAll, "grpc calculator.v1.CalculatorService/Count", "3", true},
		{"stream closed early", "calc.count", `{"to": 100, "interval": "1s"}`, func(s gateway.Stream, ctx context.Context) error {
			_, err := s.Recv(ctx)
			return err
		}, "grpc calculator.v1.CalculatorService/Count", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp.Reset()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ctx, parent := tp.Tracer("test").Start(ctx, "call")
			res, err := b.Invoke(ctx, &gateway.Call{Method: tt.method, Params: []byte(tt.params)})
			if err != nil {
				t.Fatal(err)
			}
			if tt.read != nil {
				if err := tt.read(res.Stream, ctx); (err != nil) != tt.wantErr {
					t.Fatalf("reading the stream: %v", err)
				}
				_ = res.Stream.Close()
			}
			parent.End()
			spans := exp.GetSpans()
			if len(spans) != 2 || spans[0].Name != tt.wantName || spans[0].Parent.SpanID() != parent.SpanContext().SpanID() {
				t.Fatalf("spans %+v", spans)
			}
			got := map[string]string{}
			for _, kv := range spans[0].Attributes {
				if _, dup := got[string(kv.Key)]; dup {
					t.Errorf("%s twice", kv.Key)
				}
				got[string(kv.Key)] = kv.Value.String()
			}
			want := map[string]string{"rpc.system": "grpc", "rpc.service": "calculator.v1.CalculatorService", "server.address": addr, "gatehouse.backend": "calc"}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
			if got["rpc.grpc.status_code"] != tt.wantCode || got["rpc.method"] == "" {
				t.Errorf("status code %q, method %q; want %q", got["rpc.grpc.status_code"], got["rpc.method"], tt.wantCode)
			}
		})
	}
}
