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
	listened := 0
	var lastErr error
	for _, a := range addrs {
		if !strings.HasPrefix(a, "127.0.0.1:") || seen[a] {
			t.Errorf("address %q: want a distinct 127.0.0.1:port", a)
		}
		seen[a] = true
		// A port free a moment ago may be taken since as the local port of another
		// process's outgoing connection (the race every free-port helper has, and why its
		// callers retry a start): not each must still be free, but some must.
		l, err := net.Listen("tcp", a)
		if err != nil {
			lastErr = err
			continue
		}
		listened++
		_ = l.Close()
	}
	if listened == 0 {
		t.Errorf("none of the %d addresses could be listened on; last error: %v", len(addrs), lastErr)
	}
}
