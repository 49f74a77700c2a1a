package mcpface

import (
	"net/http"

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
	// SSEPath is where a client of the legacy transport opens its event stream (GET).
	SSEPath = "/sse"
	// MessagePath is where a client of the legacy transport posts its messages.
	MessagePath = "/message"
)

// newSSEServer builds the legacy SSE transport of srv. Its DNS-rebinding check is ours
// (admit), which looks at the Origin too; mcp-go's own, on the Host only, stays on unless
// the protection is off.
func newSSEServer(srv *mcpserver.MCPServer, disableLocalhostProtection bool) *mcpserver.SSEServer {
	return mcpserver.NewSSEServer(srv,
		mcpserver.WithSSEEndpoint(SSEPath),
		mcpserver.WithMessageEndpoint(MessagePath),
		mcpserver.WithSSEDisableLocalhostProtection(disableLocalhostProtection),
		mcpserver.WithSessionIDGenerator(legacySessionID)) // bound to its opener (legacyowner.go)
}

// ServeSSE serves GET /sse and POST /message, when the face (f may be nil: off) and its
// SSE transport are on. It admits a request of the legacy transport as /mcp does (Host and Origin,
// credentials before the body, the body limit); a message must be JSON, so that a browser
// cannot send one cross-site without a preflight; no stream opens while the server drains.
func (f *Face) ServeSSE(w http.ResponseWriter, r *http.Request) {
	if f == nil || f.sse == nil {
		faces.WriteHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "The MCP SSE transport is not enabled"), observability.NewTraceID(), faces.EncodingJSON)
		return
	}
	if r.Method == http.MethodPost && !faces.IsJSON(r.Header.Get("Content-Type")) {
		faces.WriteHTTPError(w, http.StatusUnsupportedMediaType, gateway.Errorf(schemas.CodeUnsupportedMedia, "Content-Type must be application/json"), observability.NewTraceID(), faces.EncodingJSON)
		return
	}
	if r.Method == http.MethodGet && f.gw.Draining() {
		faces.WriteHTTPError(w, http.StatusServiceUnavailable, gateway.NewError(schemas.CodeShuttingDown), observability.NewTraceID(), faces.EncodingJSON)
		return
	}
	r, ok := f.admit(w, r)
	if !ok {
		return
	}
	if r.Method == http.MethodGet {
		r, end := f.watchStream(r) // the session lives as long as its stream (recheck.go)
		defer end()
		bw, r, done := f.boundWrites(w, r)
		defer done()
		f.sse.SSEHandler().ServeHTTP(&sseStreamWriter{ResponseWriter: bw}, r)
		return
	}
	if !ownsLegacySession(r) {
		writeUnknownLegacySession(w)
		return
	}
	f.sse.MessageHandler().ServeHTTP(w, r)
}
