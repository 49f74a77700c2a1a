package testproc

import (
	"fmt"
	"net"
	"strconv"
)

// FreeAddrs returns n distinct loopback addresses (127.0.0.1:port) that were free a moment
// ago. Another process may take one before the caller's program listens on it: a harness
// starts its program again on fresh addresses when it exits early ([ErrExited]).
func FreeAddrs(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		// Held until all are found, so that the n ports differ.
		defer func() { _ = l.Close() }()
		addrs = append(addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Addr().(*net.TCPAddr).Port)))
	}
	return addrs, nil
}
