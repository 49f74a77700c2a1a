package server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMaxHeaderBytesIsExact: server.boundary.max_header_bytes bounds the request's header —
// request line, header lines and the blank line — exactly: N bytes are served, N+1 are
// refused with 431 (net/http alone would admit 4 KiB more).
func TestMaxHeaderBytesIsExact(t *testing.T) {
	ts := start(t, baseConfig, nil)
	addr := strings.TrimPrefix(ts.base, "http://")
	send := func(total int) int {
		t.Helper()
		head := "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: "
		const tail = "\r\n\r\n"
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		go func() { _, _ = fmt.Fprint(c, head+strings.Repeat("a", total-len(head)-len(tail))+tail) }()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name  string
		bytes int
		want  bool // refused with 431
	}{
		{"well under", DefaultMaxHeaderBytes / 2, false},
		{"exactly the limit", DefaultMaxHeaderBytes, false},
		{"one byte over", DefaultMaxHeaderBytes + 1, true},
		{"within net/http's slop", DefaultMaxHeaderBytes + 4000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := send(tt.bytes)
			if refused := status == http.StatusRequestHeaderFieldsTooLarge; refused != tt.want {
				t.Fatalf("%d header bytes: status %d, want refused %v", tt.bytes, status, tt.want)
			}
		})
	}
}
