package conformance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// FixturePath is the path the fixture's MCP endpoint is served at.
const FixturePath = "/mcp"

// Fixture is the demo MCP fixture server (demo.MCP) served over streamable HTTP on loopback.
type Fixture struct {
	// URL is the MCP endpoint, http://127.0.0.1:port/mcp.
	URL     string
	handler *demo.MCPHTTPHandler
	srv     *http.Server
	served  chan error
}

// ServeFixture serves a new demo MCP fixture on addr, which must be a loopback address
// ("127.0.0.1:0" picks a free port). Close it when done.
func ServeFixture(addr string, opts demo.MCPOptions) (*Fixture, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("fixture address: %w", err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("fixture address %s: not a loopback IP address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fixture: %w", err)
	}
	mux := http.NewServeMux()
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	f := &Fixture{
		URL: "http://" + ln.Addr().String() + FixturePath,
		// Given the http.Server, the handler's Shutdown stops it too, and keeps ending
		// sessions until it has stopped, so that no GET stream opened meanwhile outlives it.
		handler: demo.NewMCP(opts).StreamableHTTPHandler(server.WithStreamableHTTPServer(srv)),
		srv:     srv,
		served:  make(chan error, 1),
	}
	mux.Handle(FixturePath, f.handler)
	go func() { f.served <- srv.Serve(ln) }()
	return f, nil
}

// Close ends the fixture's sessions and stops serving, waiting for requests in flight
// until ctx is done; connections still open then are closed.
func (f *Fixture) Close(ctx context.Context) error {
	err := f.handler.Shutdown(ctx)
	if ctx.Err() != nil {
		// A client may leave a connection it dialled but never used, which http.Server
		// counts as active for 5 s: not worth waiting for.
		err = f.srv.Close()
	}
	if serveErr := <-f.served; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	if err != nil {
		return fmt.Errorf("closing the fixture: %w", err)
	}
	return nil
}
