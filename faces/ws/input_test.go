package ws

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestInputQueueEdge: a call's input holds input_queue messages; one more fails the stream
// with OVERLOADED, after the queued ones are delivered.
func TestInputQueueEdge(t *testing.T) {
	in := newInputStream(2)
	in.push([]byte("1"))
	in.push([]byte("2"))
	ctx := context.Background()
	for _, want := range []string{"1", "2"} {
		if m, err := in.Recv(ctx); err != nil || string(m) != want {
			t.Fatalf("got %s %v, want %s", m, err, want)
		}
	}
	in.push([]byte("3"))
	in.push([]byte("4"))
	in.push([]byte("5")) // one past the bound
	for _, want := range []string{"3", "4"} {
		if m, err := in.Recv(ctx); err != nil || string(m) != want {
			t.Fatalf("queued messages must still arrive: got %s %v, want %s", m, err, want)
		}
	}
	_, err := in.Recv(ctx)
	var ge interface{ Code() schemas.Code }
	if !errors.As(err, &ge) || ge.Code() != schemas.CodeOverloaded {
		t.Fatalf("after the overflow: %v", err)
	}
	in2 := newInputStream(1)
	in2.push([]byte("x"))
	in2.finish(io.EOF)
	if m, err := in2.Recv(ctx); err != nil || string(m) != "x" {
		t.Fatalf("ended input must deliver what it holds first: %s %v", m, err)
	}
	if _, err := in2.Recv(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("then EOF: %v", err)
	}
}
