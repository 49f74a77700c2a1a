package server

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// The legacy HTTP+SSE transport of MCP (protocol revision 2024-11-05) for clients that do
// not speak streamable HTTP: GET /sse opens an event stream whose first event names the
// URL to POST messages to (/message?sessionId=…), and every response travels on the
// stream. It serves the same MCP server as /mcp. A session lives as long as its stream, in
// this process only: unlike /mcp sessions, it does not survive a restart.

// Fixed paths of the legacy SSE transport on the boundary listener.
const (
	mcpSSEPath     = "/sse"
	mcpMessagePath = "/message"
)

// newSSEServer builds the legacy SSE transport of srv. Its DNS-rebinding check is ours
// (admit), which looks at the Origin too; mcp-go's own, on the Host only, stays on unless
// the protection is off.
func newSSEServer(srv *mcpserver.MCPServer, disableLocalhostProtection bool) *mcpserver.SSEServer {
	return mcpserver.NewSSEServer(srv,
		mcpserver.WithSSEEndpoint(mcpSSEPath),
		mcpserver.WithMessageEndpoint(mcpMessagePath),
		mcpserver.WithSSEDisableLocalhostProtection(disableLocalhostProtection))
}

// handleMCPSSE serves GET /sse and POST /message, when the face and its SSE transport are on.
func (s *Server) handleMCPSSE(c *gin.Context) {
	if s.mcp == nil || s.mcp.sse == nil {
		faces.WriteHTTPError(c.Writer, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "The MCP SSE transport is not enabled"), observability.NewTraceID(), faces.EncodingJSON)
		return
	}
	s.mcp.serveSSE(c)
}

// serveSSE admits a request of the legacy transport as /mcp does (Host and Origin,
// credentials before the body, the body limit); a message must be JSON, so that a browser
// cannot send one cross-site without a preflight; no stream opens while the server drains.
func (f *mcpFace) serveSSE(c *gin.Context) {
	w := c.Writer
	if c.Request.Method == http.MethodPost && !faces.IsJSON(c.Request.Header.Get("Content-Type")) {
		faces.WriteHTTPError(w, http.StatusUnsupportedMediaType, gateway.Errorf(schemas.CodeUnsupportedMedia, "Content-Type must be application/json"), observability.NewTraceID(), faces.EncodingJSON)
		return
	}
	if c.Request.Method == http.MethodGet && f.s.draining.Load() {
		faces.WriteHTTPError(w, http.StatusServiceUnavailable, gateway.NewError(schemas.CodeShuttingDown), observability.NewTraceID(), faces.EncodingJSON)
		return
	}
	r, ok := f.admit(w, c.Request)
	if !ok {
		return
	}
	if r.Method == http.MethodGet {
		bw, r, done := f.s.boundWrites(w, r)
		defer done()
		f.sse.SSEHandler().ServeHTTP(&sseStreamWriter{ResponseWriter: bw}, r)
		return
	}
	f.sse.MessageHandler().ServeHTTP(w, r)
}

// boundWrites returns w with every write and flush bounded by server.boundary.write_timeout
// (boundedWriter), r under a context that ends when one of them fails, and done, to call
// once the handler is through with the response. mcp-go's event streams (the legacy /sse stream, /mcp responses that became event
// streams and its GET stream) write without a deadline of their own: a consumer that stops
// reading would hold the stream, its queue and every goroutine waiting to queue a response
// behind it for as long as the connection lives. Bounded, such a consumer is disconnected
// within one write timeout, and the stream's loop ends with the context.
func (s *Server) boundWrites(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request, func()) {
	rt := s.acquire()
	timeout := rt.cfg.Server.Boundary.WriteTimeout
	rt.release()
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

// foreignOrigin names what betrays a DNS-rebinding attempt in a request that reached a
// loopback address — "Host" or "Origin" when it is not a loopback name — and returns ""
// otherwise. Requests without an Origin (non-browser clients) pass on their Host alone.
func foreignOrigin(r *http.Request) string {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || !isLoopbackName(local.String()) {
		return ""
	}
	if !isLoopbackName(r.Host) {
		return "Host"
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !isLoopbackName(u.Host) {
			return "Origin"
		}
	}
	return ""
}

// isLoopbackName reports whether a host or host:port names the loopback interface:
// localhost, 127.0.0.0/8 or ::1.
func isLoopbackName(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
