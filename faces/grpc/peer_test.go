package grpcface

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/routing/peerconn"
	"github.com/gatehouse-dev/gatehouse/state"
)

// TestReachable: without server.internal.advertise, the bound address is advertised
// unless it is unspecified (or not TCP).
func TestReachable(t *testing.T) {
	for _, tt := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50051}, "127.0.0.1:50051"},
		{&net.TCPAddr{IP: net.ParseIP("fd00::7"), Port: 50051}, "[fd00::7]:50051"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 50051}, ""},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 50051}, ""},
		{&net.UnixAddr{Name: "/tmp/sock", Net: "unix"}, ""},
	} {
		if got := reachable(tt.addr); got != tt.want {
			t.Errorf("reachable(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

// TestNektePeerClientClosed: after Close a call fails as a PeerError wrapping
// peerconn.ErrClosed (the pool's bounds are routing/peerconn's tests).
func TestNektePeerClientClosed(t *testing.T) {
	c := newPeerClient(1<<10, nil)
	if _, err := c.pool.Conn("127.0.0.1:9"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var pe *nekte.PeerError
	if _, err := c.GetEnvelope(context.Background(), "127.0.0.1:9", nekte.PeerRef{}); !errors.As(err, &pe) || !errors.Is(err, peerconn.ErrClosed) {
		t.Fatalf("GetEnvelope after Close: %v", err)
	}
}

func TestNektePeerClientErrors(t *testing.T) {
	// A listener that accepts nothing: dialling it gets a connection refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	c := newPeerClient(1<<10, nil)
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ref := nekte.PeerRef{Owner: "o", ID: "i", Secret: make([]byte, 32)}
	var pe *nekte.PeerError
	if _, err := c.GetEnvelope(ctx, dead, ref); !errors.As(err, &pe) || pe.Addr != dead || pe.Op != "get" {
		t.Fatalf("GetEnvelope from a dead replica: %v", err)
	}
	if err := c.RevokeEnvelope(ctx, dead, ref); !errors.As(err, &pe) || pe.Op != "revoke" {
		t.Fatalf("RevokeEnvelope at a dead replica: %v", err)
	}
	for _, tt := range []struct {
		err  error
		code codes.Code
	}{
		{nekte.ErrPeerNotFound, codes.NotFound},
		{fmt.Errorf("x: %w", nekte.ErrPeerRef), codes.InvalidArgument},
		{context.DeadlineExceeded, codes.DeadlineExceeded},
		{state.ErrClosed, codes.Unavailable},
	} {
		st := status.Convert(peerStatus(tt.err))
		if st.Code() != tt.code || strings.Contains(st.Message(), "closed") {
			t.Errorf("peerStatus(%v) = %v %q, want %v without detail", tt.err, st.Code(), st.Message(), tt.code)
		}
	}
}
