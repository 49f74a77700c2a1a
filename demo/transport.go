package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// sessionIdleTTL bounds how long an idle HTTP session, and the events kept for its
// resumption, outlive their last request.
const sessionIdleTTL = 10 * time.Minute

// ServeStdio serves the fixture as newline-delimited JSON-RPC on in and out until in
// reaches EOF or ctx is done, either of which is a normal end (nil error).
//
// mcp-go keeps a single stdio session per process, so at most one ServeStdio may run at a
// time in a process. When ctx ends first, a read already blocked on in returns only when
// in is closed: close in (or exit) to release it.
func (s *MCP) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	stdio := server.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(slog.NewLogLogger(s.logger.Handler(), slog.LevelError))
	err := stdio.Listen(ctx, in, out)
	if err == nil || (ctx.Err() != nil && errors.Is(err, ctx.Err())) {
		return nil
	}
	return fmt.Errorf("serving mcp over stdio: %w", err)
}

// MCPHTTPHandler serves the fixture over MCP streamable HTTP at whatever path it is mounted
// on. Sessions are stateful (an unknown Mcp-Session-Id is answered 404), SSE streams are
// resumable with Last-Event-ID, and requests arriving over loopback with a non-localhost
// Host header are refused (DNS rebinding protection). Call Shutdown when done.
//
// Clients must open the standalone GET stream for test_sampling: mcp-go v1.2.1 sends
// sampling/createMessage only there (mark3labs/mcp-go#933 moved elicitation/create to the
// calling POST's stream, not sampling). The price is that mcp-go feeds the GET stream and
// the POST streams of a session from one notification queue, so a call's progress and log
// notifications may travel on either; the notifying tools pause before their result so
// that they arrive first (see settle).
type MCPHTTPHandler struct {
	srv *server.StreamableHTTPServer
}

var _ http.Handler = (*MCPHTTPHandler)(nil)

// StreamableHTTPHandler returns a handler serving s over streamable HTTP. The mcp-go
// options in extra are applied after the fixture's own (so they may override them).
func (s *MCP) StreamableHTTPHandler(extra ...server.StreamableHTTPOption) *MCPHTTPHandler {
	opts := []server.StreamableHTTPOption{
		server.WithStateful(true),
		// An event store makes streams resumable; it also gives every SSE stream a single
		// consumer, which mcp-go v1.2.1 needs to deliver a tool's notifications reliably
		// (mark3labs/mcp-go#969: without it about half are dropped).
		server.WithEventStore(server.NewInMemoryEventStore()),
		server.WithSessionIdleTTL(sessionIdleTTL),
		server.WithStreamableHTTPLogger(s.logger),
	}
	return &MCPHTTPHandler{srv: server.NewStreamableHTTPServer(s.mcp, append(opts, extra...)...)}
}

// ServeHTTP implements http.Handler.
func (h *MCPHTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.srv.ServeHTTP(w, r) }

// Shutdown ends every session, which releases their open GET streams, and stops the idle
// session sweeper. The handler must not serve requests afterwards.
func (h *MCPHTTPHandler) Shutdown(ctx context.Context) error {
	if err := h.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutting down the mcp http handler: %w", err)
	}
	// mcp-go ends sessions on a 5 ms tick until the http.Server has shut down; a GET stream
	// registered after the last tick keeps its session's pump goroutine running for good.
	// No handler runs any more, so one more pass ends every session that is left.
	h.srv.CloseSessions(ctx)
	return nil
}
