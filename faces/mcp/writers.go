package mcpface

import (
	"context"
	"net/http"
	"time"
)

// boundWrites returns w with every write and flush bounded by server.boundary.write_timeout
// (boundedWriter), r under a context that ends when one of them fails, and done, to call
// once the handler is through with the response. mcp-go's event streams (the legacy /sse stream, /mcp responses that became event
// streams and its GET stream) write without a deadline of their own: a consumer that stops
// reading would hold the stream, its queue and every goroutine waiting to queue a response
// behind it for as long as the connection lives. Bounded, such a consumer is disconnected
// within one write timeout, and the stream's loop ends with the context.
func (f *Face) boundWrites(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request, func()) {
	rt := f.gw.Acquire()
	timeout := rt.WriteTimeout()
	rt.Release()
	return boundWritesWithin(w, r, timeout)
}

// boundWritesWithin is boundWrites with the write timeout given.
func boundWritesWithin(w http.ResponseWriter, r *http.Request, timeout time.Duration) (http.ResponseWriter, *http.Request, func()) {
	ctx, cancel := context.WithCancel(r.Context())
	bw := &boundedWriter{ResponseWriter: w, timeout: timeout, gone: cancel}
	return bw, r.WithContext(ctx), func() {
		cancel()
		// What the server writes after the handler (the end of a chunked body) is bounded
		// too; every write of a later request on the connection sets its own deadline.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(timeout))
	}
}

// boundedWriter bounds each write and flush of a response by timeout; one that fails (the
// consumer took nothing for that long, or is gone) calls gone.
type boundedWriter struct {
	http.ResponseWriter
	timeout time.Duration
	gone    context.CancelFunc
}

func (w *boundedWriter) Write(b []byte) (int, error) {
	_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Now().Add(w.timeout))
	n, err := w.ResponseWriter.Write(b)
	if err != nil {
		w.gone()
	}
	return n, err
}

// Flush implements http.Flusher, which mcp-go requires of an event stream.
func (w *boundedWriter) Flush() {
	rc := http.NewResponseController(w.ResponseWriter)
	_ = rc.SetWriteDeadline(time.Now().Add(w.timeout))
	if rc.Flush() != nil {
		w.gone()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *boundedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sseStreamWriter drops the "Access-Control-Allow-Origin: *" mcp-go puts on every event
// stream, so that no page of another origin can read the stream (/mcp sends no CORS
// headers either).
type sseStreamWriter struct {
	http.ResponseWriter
	stripped bool
}

func (w *sseStreamWriter) strip() {
	if !w.stripped {
		w.Header().Del("Access-Control-Allow-Origin")
		w.stripped = true
	}
}

func (w *sseStreamWriter) WriteHeader(code int) {
	w.strip()
	w.ResponseWriter.WriteHeader(code)
}

func (w *sseStreamWriter) Write(b []byte) (int, error) {
	w.strip()
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher, which mcp-go requires of an event stream.
func (w *sseStreamWriter) Flush() {
	w.strip()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *sseStreamWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
