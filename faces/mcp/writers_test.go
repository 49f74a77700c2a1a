package mcpface

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestBoundedWritesCutOffAConsumerThatStopsReading: an event stream written through
// boundWritesWithin to a client that never reads fails a write within the write timeout
// and ends the request's context — the signal mcp-go's stream loops stop on — instead of
// blocking for as long as the connection lives.
func TestBoundedWritesCutOffAConsumerThatStopsReading(t *testing.T) {
	const timeout = 300 * time.Millisecond
	type result struct {
		ctxErr error
		wrote  int
	}
	results := make(chan result, 1)
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw, r, done := boundWritesWithin(w, r, timeout)
		defer done()
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		wrote := 0
		for wrote < 1<<30 { // far beyond what socket buffers hold
			if _, err := bw.Write(chunk); err != nil {
				break
			}
			bw.(http.Flusher).Flush()
			wrote += len(chunk)
		}
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		results <- result{ctxErr: r.Context().Err(), wrote: wrote}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
	})
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// The client reads nothing.
	select {
	case r := <-results:
		if r.ctxErr == nil || r.wrote >= 1<<30 {
			t.Fatalf("after %d bytes the stream's context is %v; want it ended by the failed write", r.wrote, r.ctxErr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write to a consumer that stopped reading was not cut off")
	}
}
