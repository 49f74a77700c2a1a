package testproc_test

import (
	"net"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/testproc"
)

func TestFreeAddrs(t *testing.T) {
	t.Parallel()
	addrs, err := testproc.FreeAddrs(5)
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) != 5 {
		t.Fatalf("got %d addresses, want 5", len(addrs))
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if !strings.HasPrefix(a, "127.0.0.1:") || seen[a] {
			t.Errorf("address %q: want a distinct 127.0.0.1:port", a)
		}
		seen[a] = true
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Errorf("listening on %s: %v", a, err)
			continue
		}
		_ = l.Close()
	}
}
