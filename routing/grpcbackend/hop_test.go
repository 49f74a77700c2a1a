package grpcbackend_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
)

// seenMetadata records the incoming metadata of every RPC a server handled, by full method.
type seenMetadata struct {
	mu  sync.Mutex
	got map[string][]metadata.MD
}

func (s *seenMetadata) record(ctx context.Context, method string) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got[method] = append(s.got[method], md.Copy())
}

// last returns the metadata of the latest RPC to method.
func (s *seenMetadata) last(t *testing.T, method string) metadata.MD {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	mds := s.got[method]
	if len(mds) == 0 {
		t.Fatalf("the backend saw no call to %s", method)
	}
	return mds[len(mds)-1]
}

// serveRecordingCalculator runs the real calculator with interceptors that record the
// metadata of every unary and streaming RPC.
func serveRecordingCalculator(t *testing.T) (string, *seenMetadata) {
	t.Helper()
	seen := &seenMetadata{got: map[string][]metadata.MD{}}
	gs := demo.NewCalculatorServer(
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			seen.record(ctx, info.FullMethod)
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			seen.record(ss.Context(), info.FullMethod)
			return h(srv, ss)
		}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String(), seen
}

// inputStream is a client-streaming caller's messages.
type inputStream struct{ msgs []string }

func (s *inputStream) Recv(context.Context) ([]byte, error) {
	if len(s.msgs) == 0 {
		return nil, io.EOF
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return []byte(m), nil
}

func (s *inputStream) Close() error { return nil }

// callerContext is a context as a gRPC-face caller's call arrives with: its own
// credentials and headers in incoming metadata, and outgoing metadata left by whatever ran
// before the backend.
func callerContext(ctx context.Context) context.Context {
	ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("authorization", "Bearer caller-token", "x-caller-secret", "s3cret"))
	return metadata.NewOutgoingContext(ctx, metadata.Pairs("authorization", "Bearer stale", "x-leftover", "1"))
}

// drain reads a result's stream to its end.
func drain(ctx context.Context, t *testing.T, res *gateway.Result) {
	t.Helper()
	if res.Stream == nil {
		return
	}
	defer func() { _ = res.Stream.Close() }()
	for {
		if _, err := res.Stream.Recv(ctx); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

func TestHopCredentialInMetadata(t *testing.T) {
	addr, seen := serveRecordingCalculator(t)
	backends := map[string]*grpcbackend.Backend{}
	for _, mode := range []string{"", "passthrough", "none"} {
		b := newBackend(t, grpcbackend.Config{Name: "calc-" + mode, Address: addr, Descriptors: protosSource(),
			Services:        []grpcbackend.ServiceConfig{{Service: calc, Prefix: "calc."}},
			DownstreamToken: gateway.DownstreamTokenConfig{Mode: mode}})
		waitLoaded(t, b)
		backends[mode] = b
	}
	methods := []struct {
		name, params, rpc string
		input             []string
	}{
		{"calc.subtract", `[3, 1]`, "/" + calc + "/Subtract", nil},
		{"calc.count", `{"to": 2}`, "/" + calc + "/Count", nil},
		{"calc.sumStream", ``, "/" + calc + "/SumStream", []string{`{"value": 1}`, `{"value": 2}`}},
		{"calc.accumulate", ``, "/" + calc + "/Accumulate", []string{`{"delta": 4}`}},
	}
	tests := []struct {
		name, mode, token string
		want              []string // the authorization values the backend must see
	}{
		{"minted token sent", "", "minted.jwt.value", []string{"Bearer minted.jwt.value"}},
		{"passthrough token sent", "passthrough", "callers.own.jwt", []string{"Bearer callers.own.jwt"}},
		{"no token, nothing sent", "", "", nil},
		{"mode none never sends one", "none", "leaked.jwt.value", nil},
	}
	for _, tt := range tests {
		for _, m := range methods {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				ctx = gateway.WithHopToken(callerContext(ctx), tt.token)
				call := &gateway.Call{Method: m.name, Params: []byte(m.params), ID: jsonrpc.NumberID(7),
					TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}
				if m.input != nil {
					call.Input = &inputStream{msgs: m.input}
				}
				res, err := backends[tt.mode].Invoke(ctx, call)
				if err != nil {
					t.Fatal(err)
				}
				drain(ctx, t, res)
				md := seen.last(t, m.rpc)
				if got := md.Get("authorization"); strings.Join(got, "|") != strings.Join(tt.want, "|") {
					t.Fatalf("authorization %q, want %q", got, tt.want)
				}
				for _, k := range []string{"x-caller-secret", "x-leftover"} {
					if v := md.Get(k); len(v) != 0 {
						t.Fatalf("the caller's metadata %s=%q reached the backend", k, v)
					}
				}
				if got := md.Get("x-request-id"); len(got) != 1 || got[0] != call.TraceID {
					t.Fatalf("x-request-id %q: the call's own metadata is gone", got)
				}
			})
		}
	}
}

func TestHopAuth(t *testing.T) {
	tests := []struct {
		name string
		cfg  gateway.DownstreamTokenConfig
		want gateway.HopAuth
	}{
		{"default: mint for the backend's name", gateway.DownstreamTokenConfig{}, gateway.HopAuth{Mode: gateway.HopMint, Audience: "billing"}},
		{"mint with an audience", gateway.DownstreamTokenConfig{Mode: "mint", Audience: "api://billing"}, gateway.HopAuth{Mode: gateway.HopMint, Audience: "api://billing"}},
		{"passthrough", gateway.DownstreamTokenConfig{Mode: "passthrough"}, gateway.HopAuth{Mode: gateway.HopPassthrough}},
		{"none", gateway.DownstreamTokenConfig{Mode: "none"}, gateway.HopAuth{Mode: gateway.HopNone}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t, grpcbackend.Config{Name: "billing", Address: "127.0.0.1:1",
				Descriptors: protosSource(), DownstreamToken: tt.cfg})
			for _, method := range []string{"calc.subtract", "anything"} {
				if got := b.HopAuth(&gateway.Call{Method: method}); got != tt.want {
					t.Fatalf("%s: got %+v, want %+v", method, got, tt.want)
				}
			}
		})
	}
}

// TestDownstreamTokenValidate: the section is validated with the rest of the backend, its
// errors naming it (the rules themselves are tested in package gateway).
func TestDownstreamTokenValidate(t *testing.T) {
	cfg := func(d gateway.DownstreamTokenConfig) grpcbackend.Config {
		return grpcbackend.Config{Name: "billing", Descriptors: grpcbackend.DescriptorsConfig{Reflection: true}, DownstreamToken: d}
	}
	tests := []struct {
		name string
		d    gateway.DownstreamTokenConfig
		want string // "" for valid
	}{
		{"absent", gateway.DownstreamTokenConfig{}, ""},
		{"unknown mode", gateway.DownstreamTokenConfig{Mode: "forward"}, `backend "billing": downstream_token.mode: "forward" is not one of mint, passthrough, none`},
		{"audience with a space", gateway.DownstreamTokenConfig{Audience: "billing api"}, "downstream_token.audience must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := cfg(tt.d).Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if tt.want != "" {
				if _, err := grpcbackend.New(cfg(tt.d), nil, nil); err == nil {
					t.Fatal("New accepted a configuration Validate refuses")
				}
			}
		})
	}
}
