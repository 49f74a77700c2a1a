package server

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
	mcpserver "github.com/mark3labs/mcp-go/server"

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
		writeHTTPError(c.Writer, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "The MCP SSE transport is not enabled"), observability.NewTraceID())
		return
	}
	s.mcp.serveSSE(c)
}

// serveSSE admits a request of the legacy transport as /mcp does (Host and Origin,
// credentials before the body, the body limit); a message must be JSON, so that a browser
// cannot send one cross-site without a preflight; no stream opens while the server drains.
func (f *mcpFace) serveSSE(c *gin.Context) {
	w := c.Writer
	if c.Request.Method == http.MethodPost && !isJSON(c.Request.Header.Get("Content-Type")) {
		writeHTTPError(w, http.StatusUnsupportedMediaType, gateway.Errorf(schemas.CodeUnsupportedMedia, "Content-Type must be application/json"), observability.NewTraceID())
		return
	}
	if c.Request.Method == http.MethodGet && f.s.draining.Load() {
		writeHTTPError(w, http.StatusServiceUnavailable, gateway.NewError(schemas.CodeShuttingDown), observability.NewTraceID())
		return
	}
	r, ok := f.admit(w, c.Request)
	if !ok {
		return
	}
	if r.Method == http.MethodGet {
		f.sse.SSEHandler().ServeHTTP(&sseStreamWriter{ResponseWriter: w}, r)
		return
	}
	f.sse.MessageHandler().ServeHTTP(w, r)
}

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
