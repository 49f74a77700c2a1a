// Command hopserver is an MCP server that insists on the gateway's downstream tokens, for
// the end-to-end tests of hop tokens. Its one tool, whoami, verifies the token its request
// carried — over stdio in params._meta["gatehouse.dev/authorization"], over streamable
// HTTP in the Authorization header — against the gateway's published JWK Set, and answers
// with the verified claims as JSON text; a missing or invalid token is a tool error. Its
// one resource, hop://whoami, does the same for resources/read: the claims as its text, a
// missing or invalid token a JSON-RPC error.
//
//	hopserver stdio           serve on stdin and stdout
//	hopserver http            serve streamable HTTP on 127.0.0.1, printing "listening ADDR"
//
// Environment: HOP_JWKS_URL_FILE names a file holding the JWKS URL (read at the first call:
// the gateway's address is known only once it runs); HOP_AUDIENCE is the audience the
// token must carry.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/internal/hoptest"
)

// metaKey is the _meta member the gateway puts a stdio hop's token in.
const metaKey = "gatehouse.dev/authorization"

type headerKey struct{}

var verifier = sync.OnceValues(func() (*hoptest.Verifier, error) {
	url, err := os.ReadFile(os.Getenv("HOP_JWKS_URL_FILE"))
	if err != nil {
		return nil, err
	}
	return hoptest.NewVerifier(context.Background(), strings.TrimSpace(string(url)), "gatehouse", os.Getenv("HOP_AUDIENCE"), 200*time.Millisecond)
})

// whoamiURI is the resource that verifies a resources/read's token.
func whoamiURI() string { return "hop://" + os.Getenv("HOP_AUDIENCE") + "/whoami" }

func whoami(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	out, err := verified(ctx, req.Params.Meta)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil // a refused token is the tool's answer
	}
	return mcp.NewToolResultText(out), nil
}

func whoamiResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	out, err := verified(ctx, req.Params.Meta)
	if err != nil {
		return nil, err
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: out}}, nil
}

// verified returns the claims of the token the request carried, as JSON: from the
// Authorization header over HTTP, from _meta over stdio.
func verified(ctx context.Context, meta *mcp.Meta) (string, error) {
	bearer, _ := ctx.Value(headerKey{}).(string)
	if meta != nil {
		if v, ok := meta.AdditionalFields[metaKey].(string); ok {
			if bearer != "" {
				return "", errors.New("refused: a token in both the header and _meta")
			}
			bearer = v
		}
	}
	v, err := verifier()
	if err != nil {
		return "", fmt.Errorf("verifier: %w", err)
	}
	c, err := v.Verify(bearer)
	if err != nil {
		return "", fmt.Errorf("refused: %w", err)
	}
	out, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

func main() {
	s := server.NewMCPServer("hopserver", "1.0.0", server.WithToolCapabilities(false), server.WithResourceCapabilities(false, false))
	s.AddTool(mcp.NewTool("whoami", mcp.WithDescription("verify the hop token and return its claims")), whoami)
	s.AddResource(mcp.NewResource(whoamiURI(), "whoami", mcp.WithResourceDescription("the claims of the verified hop token")), whoamiResource)
	var err error
	switch mode := strings.Join(os.Args[1:], " "); mode {
	case "stdio":
		err = server.ServeStdio(s)
	case "http":
		err = serveHTTP(s)
	default:
		err = fmt.Errorf("usage: hopserver stdio|http (got %q)", mode)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "hopserver:", err)
		os.Exit(1)
	}
}

// serveHTTP serves streamable HTTP on a free loopback port until stdin closes (the test
// that started it has gone).
func serveHTTP(s *server.MCPServer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	h := server.NewStreamableHTTPServer(s, server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, headerKey{}, r.Header.Get("Authorization"))
	}))
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	_, _ = fmt.Fprintf(os.Stdout, "listening %s\n", ln.Addr())
	go func() {
		_, _ = os.Stdin.Read(make([]byte, 1)) // EOF when the parent goes
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
