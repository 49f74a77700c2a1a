package grpcbackend_test

import (
	"errors"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestNotSent: only an RPC that no connection took is marked gateway.ErrNotSent; one that
// reached the backend is not, whether the backend answered UNAVAILABLE or the connection
// broke under it.
func TestNotSent(t *testing.T) {
	refused := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close() // nothing listens here now
		return addr
	}
	answersUnavailable := func(t *testing.T) string {
		return serveScripted(t, func(any, grpc.ServerStream) error { return status.Error(codes.Unavailable, "draining") })
	}
	breaksMidCall := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var gs *grpc.Server
		gs = grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
			go gs.Stop() // the connection closes under the call
			<-ss.Context().Done()
			return ss.Context().Err()
		}))
		go func() { _ = gs.Serve(ln) }()
		t.Cleanup(gs.Stop)
		return ln.Addr().String()
	}
	tests := []struct {
		name    string
		addr    func(t *testing.T) string
		notSent bool
	}{
		{"connection refused", refused, true},
		{"the backend answers UNAVAILABLE", answersUnavailable, false},
		{"the connection breaks mid-call", breaksMidCall, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t, grpcbackend.Config{Name: "calc", Address: tt.addr(t), Descriptors: protosSource(),
				Methods: map[string]string{"subtract": calc + "/Subtract"}})
			waitLoaded(t, b)
			_, err := invoke(t, b, "subtract", `[1,2]`)
			if err == nil || err.Code() != schemas.CodeUnavailable {
				t.Fatalf("got %v, want UNAVAILABLE", err)
			}
			if got := errors.Is(err, gateway.ErrNotSent); got != tt.notSent {
				t.Fatalf("not sent = %v, want %v (%v)", got, tt.notSent, err)
			}
		})
	}
}
