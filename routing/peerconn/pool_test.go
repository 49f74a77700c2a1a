package peerconn

import (
	"errors"
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPoolBounds: at most MaxConns connections, the least recently used closed first, a
// reused address the most recent; after Close, Conn fails with ErrClosed.
func TestPoolBounds(t *testing.T) {
	p := New(1<<10, nil)
	first, _ := p.Conn("127.0.0.1:1")
	for i := range MaxConns + 8 {
		if _, err := p.Conn(fmt.Sprintf("127.0.0.1:%d", 1+i)); err != nil {
			t.Fatal(err)
		}
	}
	p.mu.Lock()
	n, oldest := len(p.conns), p.order[0]
	p.mu.Unlock()
	if n != MaxConns || oldest != "127.0.0.1:9" {
		t.Fatalf("%d connections kept, oldest %s; want %d, oldest 127.0.0.1:9", n, oldest, MaxConns)
	}
	if first.GetState().String() != "SHUTDOWN" {
		t.Fatalf("the evicted connection is %s, want SHUTDOWN", first.GetState())
	}
	again, err := p.Conn("127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	last, same := p.order[len(p.order)-1], p.conns["127.0.0.1:9"] == again
	p.mu.Unlock()
	if last != "127.0.0.1:9" || !same {
		t.Fatalf("a reused address: most recent %s, same connection %v", last, same)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Conn("127.0.0.1:9"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Conn after Close: %v, want ErrClosed", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}
