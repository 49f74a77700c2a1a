package testproc_test

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/testproc"
)

func TestFreeAddrs(t *testing.T) {
	t.Parallel()
	// Every address must be listened on. A port free a moment ago can be taken since as the
	// local port of another process's outgoing connection (the race every free-port helper
	// has, and why its callers retry a start), so a set with a taken port is asked for
	// again, a few times; a helper that returned ports in use fails every round.
	var last error
	for range 5 {
		if last = checkFreeAddrs(); last == nil {
			return
		}
	}
	t.Fatal(last)
}

// checkFreeAddrs asks for five addresses and checks they are distinct loopback ports that
// can each be listened on.
func checkFreeAddrs() error {
	addrs, err := testproc.FreeAddrs(5)
	if err != nil {
		return err
	}
	if len(addrs) != 5 {
		return fmt.Errorf("got %d addresses, want 5", len(addrs))
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if !strings.HasPrefix(a, "127.0.0.1:") || seen[a] {
			return fmt.Errorf("address %q: want a distinct 127.0.0.1:port", a)
		}
		seen[a] = true
		l, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", a, err)
		}
		_ = l.Close()
	}
	return nil
}
