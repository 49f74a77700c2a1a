package grpcbackend_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
	calculatorv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/calculator/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const calc = "calculator.v1.CalculatorService"

// serveCalculator runs the real calculator backend on loopback.
func serveCalculator(t *testing.T) string {
	t.Helper()
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	return addr
}

// serveScripted runs a gRPC server answering every method with handler.
func serveScripted(t *testing.T, handler grpc.StreamHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.UnknownServiceHandler(handler))
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String()
}

func newBackend(t *testing.T, cfg grpcbackend.Config) *grpcbackend.Backend {
	t.Helper()
	b, err := grpcbackend.New(cfg, slog.New(slog.DiscardHandler), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func waitLoaded(t *testing.T, b *grpcbackend.Backend) {
	t.Helper()
	select {
	case <-b.Loaded():
	case <-time.After(10 * time.Second):
		t.Fatalf("descriptors did not load: %v", b.Ready(context.Background()))
	}
}

func invoke(t *testing.T, b *grpcbackend.Backend, method, params string) (string, *gateway.Error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := b.Invoke(ctx, &gateway.Call{Method: method, Params: []byte(params), ID: jsonrpc.NumberID(1), TraceID: "0123456789abcdef0123456789abcdef"})
	if err != nil {
		return "", gateway.AsError(err)
	}
	return string(res.Value), nil
}

// protosSource compiles the calculator's .proto from the repository.
func protosSource() grpcbackend.DescriptorsConfig {
	return grpcbackend.DescriptorsConfig{Protos: &grpcbackend.ProtosConfig{
		ImportPaths: []string{"../../schemas/proto"}, Files: []string{"calculator/v1/calculator.proto"}}}
}

// descriptorSetFile writes a FileDescriptorSet of the generated calculator file and its imports.
func descriptorSetFile(t *testing.T) string {
	t.Helper()
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		for i := range fd.Imports().Len() {
			add(fd.Imports().Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	add(calculatorv1.File_calculator_v1_calculator_proto)
	data, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "calculator.binpb")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDescriptorSources(t *testing.T) {
	addr := serveCalculator(t)
	sources := map[string]grpcbackend.DescriptorsConfig{
		"reflection": {Reflection: true},
		"protos":     protosSource(),
		"file":       {File: descriptorSetFile(t)},
	}
	for name, src := range sources {
		t.Run(name, func(t *testing.T) {
			b := newBackend(t, grpcbackend.Config{
				Name: "calc", Address: addr, Descriptors: src,
				Methods: map[string]string{"subtract": calc + "/Subtract"},
				Unwrap:  map[string]string{"subtract": "result"},
			})
			waitLoaded(t, b)
			if got, err := invoke(t, b, "subtract", `[42, 23]`); err != nil || got != "19" {
				t.Fatalf("got %s, %v", got, err)
			}
			if err := b.Ready(context.Background()); err != nil {
				t.Fatalf("not ready: %v", err)
			}
		})
	}
}

func TestMethodMapping(t *testing.T) {
	addr := serveCalculator(t)
	b := newBackend(t, grpcbackend.Config{
		Name: "calc", Address: addr, Descriptors: grpcbackend.DescriptorsConfig{Reflection: true},
		Methods: map[string]string{"subtract": calc + "/Subtract", "sum": calc + "/Sum", "get_data": calc + "/GetData"},
		Services: []grpcbackend.ServiceConfig{
			{Service: calc, Prefix: "calc."},
			{Service: calc, Prefix: "snake.", Naming: "snake"},
		},
		Unwrap: map[string]string{"subtract": "result", "sum": "result", "get_data": "result", "snake.get_data": "result"},
	})
	waitLoaded(t, b)
	tests := []struct {
		method, params, want string
		code                 int
	}{
		{"subtract", `[42, 23]`, `19`, 0},
		{"subtract", `{"subtrahend": 23, "minuend": 42}`, `19`, 0},
		{"subtract", `{"minuend": 42, "subtrahend": 23}`, `19`, 0},
		{"sum", `[1, 2, 4]`, `7`, 0},
		{"get_data", ``, `["hello",5]`, 0},
		{"calc.subtract", `{"minuend": 5, "subtrahend": 7}`, `{"result":-2}`, 0},
		{"calc.getData", ``, `{"result":["hello",5]}`, 0},
		{"snake.get_data", ``, `["hello",5]`, 0},
		{"snake.notify_hello", `[7]`, `{}`, 0},
		{"calc.nope", ``, ``, -32601},
		{"subtract", `{"minuend": "x"}`, ``, -32602},
		{"subtract", `{"minuend": 1, "bogus": 2}`, ``, -32602},
		{"subtract", `[1, 2, 3]`, ``, -32602},
		{"calc.sumStream", ``, ``, -32600}, // client streaming needs call.Input
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.params, func(t *testing.T) {
			got, err := invoke(t, b, tt.method, tt.params)
			if tt.code != 0 {
				if err == nil || int(err.Code()) != tt.code {
					t.Fatalf("got %s, %v; want code %d", got, err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if !jsonEqual(got, tt.want) {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
	t.Run("params error names the path", func(t *testing.T) {
		_, err := invoke(t, b, "subtract", `{"minuend": "x"}`)
		if p, _ := err.Data()["path"].(string); !strings.HasPrefix(p, "params.minuend") {
			t.Fatalf("data %v", err.Data())
		}
	})
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func TestDeadlineReachesTheBackendLessTheReserve(t *testing.T) {
	seen := make(chan time.Duration, 1)
	seenMD := make(chan metadata.MD, 1)
	addr := serveScripted(t, func(_ any, stream grpc.ServerStream) error {
		dl, _ := stream.Context().Deadline()
		seen <- time.Until(dl)
		md, _ := metadata.FromIncomingContext(stream.Context())
		seenMD <- md
		<-stream.Context().Done()
		return status.FromContextError(stream.Context().Err()).Err()
	})
	b := newBackend(t, grpcbackend.Config{Name: "slow", Address: addr, Descriptors: protosSource(),
		Methods: map[string]string{"subtract": calc + "/Subtract"}, DeadlineReserve: 100 * time.Millisecond})
	waitLoaded(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := b.Invoke(ctx, &gateway.Call{Method: "subtract", Params: []byte(`[1,2]`), ID: jsonrpc.StringID("r1"),
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"})
	if took := time.Since(began); took > 700*time.Millisecond {
		t.Fatalf("waited %v past a 500ms deadline", took)
	}
	ge := gateway.AsError(err)
	if ge == nil || ge.Code() != -32000 {
		t.Fatalf("got %v, want DEADLINE_EXCEEDED", err)
	}
	if left := <-seen; left > 420*time.Millisecond || left < 100*time.Millisecond {
		t.Fatalf("backend saw %v left; want about 500ms − 100ms reserve", left)
	}
	md := <-seenMD
	tp := md.Get("traceparent")
	if len(tp) != 1 || !strings.HasPrefix(tp[0], "00-4bf92f3577b34da6a3ce929d0e0e4736-") || len(tp[0]) != 55 {
		t.Errorf("traceparent %v", tp)
	}
	if got := md.Get("x-request-id"); len(got) != 1 || got[0] != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("x-request-id %v", got)
	}
	if got := md.Get("x-jsonrpc-id"); len(got) != 1 || got[0] != `"r1"` {
		t.Errorf("x-jsonrpc-id %v", got)
	}
}

func TestStatusMapping(t *testing.T) {
	tests := []struct {
		code    codes.Code
		details []proto.Message
		want    int
		check   func(t *testing.T, e *gateway.Error)
	}{
		{codes.InvalidArgument, nil, -32602, nil},
		{codes.PermissionDenied, nil, 4002, nil},
		{codes.Unauthenticated, nil, 4001, nil},
		{codes.Unimplemented, nil, -32601, nil},
		{codes.ResourceExhausted, []proto.Message{&errdetails.RetryInfo{RetryDelay: durationpb.New(1500 * time.Millisecond)}}, 5001,
			func(t *testing.T, e *gateway.Error) {
				if e.Data()["retry_after_ms"] != int64(1500) {
					t.Errorf("retry_after_ms %v", e.Data()["retry_after_ms"])
				}
				if j, _ := json.Marshal(e.Data()["details"]); !strings.Contains(string(j), `"@type":"type.googleapis.com/google.rpc.RetryInfo"`) {
					t.Errorf("details %s", j)
				}
			}},
		{codes.Unavailable, nil, -32020, func(t *testing.T, e *gateway.Error) {
			if e.Data()["recovery_hint"] != "RETRY_WITH_BACKOFF" {
				t.Errorf("data %v", e.Data())
			}
		}},
		{codes.Internal, []proto.Message{&errdetails.ErrorInfo{Reason: "BROKEN", Domain: "calc"}}, -32603, nil},
	}
	for _, tt := range tests {
		t.Run(tt.code.String(), func(t *testing.T) {
			addr := serveScripted(t, func(_ any, stream grpc.ServerStream) error {
				_ = stream.SetHeader(metadata.Pairs("x-backend", "scripted"))
				st, _ := status.New(tt.code, "backend says no").WithDetails(protoV1(tt.details)...)
				return st.Err()
			})
			b := newBackend(t, grpcbackend.Config{Name: "scripted", Address: addr, Descriptors: protosSource(),
				Methods: map[string]string{"subtract": calc + "/Subtract"}, SurfaceMetadata: []string{"x-backend"}})
			waitLoaded(t, b)
			_, err := invoke(t, b, "subtract", `[1,2]`)
			if err == nil || int(err.Code()) != tt.want {
				t.Fatalf("got %v, want %d", err, tt.want)
			}
			if !err.IsWire() || err.Message() != "backend says no" || err.Data()["grpc_code"] != tt.code.String() {
				t.Fatalf("a status the backend sent must pass through as a wire error: %v %v", err, err.Data())
			}
			if md, _ := err.Data()["metadata"].(map[string][]string); md["x-backend"][0] != "scripted" {
				t.Errorf("surfaced metadata %v", err.Data()["metadata"])
			}
			if tt.check != nil {
				tt.check(t, err)
			}
		})
	}
}

func protoV1(ms []proto.Message) []protoadapt.MessageV1 {
	out := make([]protoadapt.MessageV1, len(ms))
	for i, m := range ms {
		out[i] = protoadapt.MessageV1Of(m)
	}
	return out
}

func TestUnreachableBackend(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens here now
	t.Run("descriptors from the backend never load", func(t *testing.T) {
		b := newBackend(t, grpcbackend.Config{Name: "gone", Address: addr, Descriptors: grpcbackend.DescriptorsConfig{Reflection: true, Timeout: 200 * time.Millisecond},
			Methods: map[string]string{"subtract": calc + "/Subtract"}})
		time.Sleep(300 * time.Millisecond)
		if b.Ready(context.Background()) == nil {
			t.Fatal("ready without descriptors")
		}
		_, err := invoke(t, b, "subtract", `[1,2]`)
		if err == nil || err.Code() != -32020 || err.Data()["backend"] != "gone" {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("descriptors load, the connection fails", func(t *testing.T) {
		b := newBackend(t, grpcbackend.Config{Name: "gone", Address: addr, Descriptors: protosSource(),
			Methods: map[string]string{"subtract": calc + "/Subtract"}})
		waitLoaded(t, b)
		_, err := invoke(t, b, "subtract", `[1,2]`)
		if err == nil || err.Code() != -32020 || err.IsWire() {
			t.Fatalf("got %v (wire %v); want a gateway-made UNAVAILABLE", err, err != nil && err.IsWire())
		}
	})
}

func TestDeprecatedService(t *testing.T) {
	addr := serveCalculator(t)
	b := newBackend(t, grpcbackend.Config{Name: "calc", Address: addr, Descriptors: protosSource(),
		Services: []grpcbackend.ServiceConfig{
			{Service: calc, Prefix: "v1.calc.", Deprecated: &grpcbackend.DeprecationConfig{Sunset: "2020-01-01", Hint: "use v2.calc.*"}},
			{Service: calc, Prefix: "v9.calc.", Deprecated: &grpcbackend.DeprecationConfig{Sunset: "2999-01-01", Hint: "use v10"}},
		}})
	waitLoaded(t, b)
	_, err := invoke(t, b, "v1.calc.getData", ``)
	if err == nil || err.Code() != -32022 || err.Data()["migration_hint"] != "use v2.calc.*" {
		t.Fatalf("past sunset: %v", err)
	}
	if _, err := invoke(t, b, "v9.calc.getData", ``); err != nil {
		t.Fatalf("before sunset: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  grpcbackend.Config
		ok   bool
	}{
		{"one source", grpcbackend.Config{Name: "a", Descriptors: grpcbackend.DescriptorsConfig{Reflection: true}}, true},
		{"no source", grpcbackend.Config{Name: "a"}, false},
		{"two sources", grpcbackend.Config{Name: "a", Descriptors: grpcbackend.DescriptorsConfig{Reflection: true, File: "x"}}, false},
		{"bad rpc", grpcbackend.Config{Name: "a", Descriptors: grpcbackend.DescriptorsConfig{Reflection: true}, Methods: map[string]string{"m": "NoSlash"}}, false},
		{"bad naming", grpcbackend.Config{Name: "a", Descriptors: grpcbackend.DescriptorsConfig{Reflection: true}, Services: []grpcbackend.ServiceConfig{{Service: "s", Naming: "kebab"}}}, false},
		{"bad sunset", grpcbackend.Config{Name: "a", Descriptors: grpcbackend.DescriptorsConfig{Reflection: true}, Services: []grpcbackend.ServiceConfig{{Service: "s", Deprecated: &grpcbackend.DeprecationConfig{Sunset: "soon"}}}}, false},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestServerStreamingResult(t *testing.T) {
	addr := serveCalculator(t)
	b := newBackend(t, grpcbackend.Config{Name: "calc", Address: addr, Descriptors: grpcbackend.DescriptorsConfig{Reflection: true},
		Services: []grpcbackend.ServiceConfig{{Service: calc, Prefix: "calc."}}})
	waitLoaded(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := b.Invoke(ctx, &gateway.Call{Method: "calc.count", Params: []byte(`{"to": 2}`)})
	if err != nil || res.Stream == nil {
		t.Fatalf("got %v, %v; want a stream", res, err)
	}
	defer func() { _ = res.Stream.Close() }()
	var got []string
	for {
		msg, err := res.Stream.Recv(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(msg))
	}
	// proto3 JSON leaves out zero values: the first message, value 0, is {}.
	if strings.Join(got, " ") != `{} {"value":"1"} {"value":"2"}` {
		t.Fatalf("got %v", got)
	}
	t.Run("a backend error ends the stream with the mapped error", func(t *testing.T) {
		res, err := b.Invoke(ctx, &gateway.Call{Method: "calc.count", Params: []byte(`{"from": 5, "to": 1}`)})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = res.Stream.Close() }()
		_, err = res.Stream.Recv(ctx)
		if ge := gateway.AsError(err); ge == nil || ge.Code() != -32602 || !ge.IsWire() {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("closing the stream cancels the call", func(t *testing.T) {
		res, err := b.Invoke(ctx, &gateway.Call{Method: "calc.count", Params: []byte(`{"to": 100, "interval": "1s"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := res.Stream.Recv(ctx); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		_ = res.Stream.Close()
		if _, err := res.Stream.Recv(ctx); err == nil || time.Since(began) > time.Second {
			t.Fatalf("after Close: %v after %v", err, time.Since(began))
		}
	})
}
