package mcpface

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Stdio is one local MCP client ServeStdio serves: a desktop agent that spawned the
// gateway and speaks newline-delimited JSON-RPC on its standard streams.
type Stdio struct {
	// In and Out are the client's streams.
	In  io.Reader
	Out io.Writer
	// Principal is the client, authenticated by LocalPrincipal.
	Principal gateway.Principal
	// Grace bounds how long requests in flight at the end of In get to be answered
	// (server.shutdown_grace).
	Grace time.Duration
	// MaxLineBytes is the longest message whose id is followed (jsonrpc.max_body_bytes).
	MaxLineBytes int64
	// MaxInFlight bounds the routed lines served at once (mcp_face.stdio_max_in_flight);
	// 0: DefaultStdioMaxInFlight.
	MaxInFlight int
}

// ServeStdio serves the face's MCP server to st's client, in the local zone, until its
// input ends or ctx is done (both a normal end). Lines that are not MCP (routedLine) — the
// gateway's own methods, such as NEKTE's — go through the gateway's JSON-RPC pipeline
// instead, as calls of st.Principal from the local zone (serveStdioLine). mcp-go keeps one stdio session per
// process, so at most one ServeStdio may run at a time.
func (f *Face) ServeStdio(ctx context.Context, st Stdio) error {
	pipe := newStdioPipe(ctx, st.In, st.Out, st.Grace, st.MaxLineBytes)
	rpcCtx, cancelRPC := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { cancelRPC(); pipe.close() }() // routed calls end with the serving
	pipe.route = routedLine
	pipe.slots = make(chan struct{}, cmp.Or(st.MaxInFlight, DefaultStdioMaxInFlight))
	pipe.serve = func(line []byte) { f.serveStdioLine(rpcCtx, st.Principal, line, pipe.writeLine) }
	pipe.big = func() { f.refuseStdioLine(st.MaxLineBytes, pipe.writeLine) }
	stdio := mcpserver.NewStdioServer(f.srv)
	stdio.SetErrorLogger(slog.NewLogLogger(f.log.Handler(), slog.LevelError))
	stdio.SetContextFunc(func(ctx context.Context) context.Context {
		return context.WithValue(context.WithValue(ctx, principalKey{}, st.Principal), zoneKey{}, gateway.ZoneLocal)
	})
	err := stdio.Listen(ctx, pipe, pipe)
	switch {
	case ctx.Err() != nil: // Listen reports the context's end as its error: a normal end
		f.log.Info("stopping on a signal")
		err = nil
	case err == nil:
		f.log.Info("stdin closed: stopping")
	default:
		err = fmt.Errorf("serving MCP over stdio: %w", err)
	}
	return err
}

type zoneKey struct{}

// callerZone is the trust zone of the MCP caller of ctx: local over stdio, external on the
// boundary's transports.
func callerZone(ctx context.Context) gateway.TrustZone {
	if z, ok := ctx.Value(zoneKey{}).(gateway.TrustZone); ok {
		return z
	}
	return gateway.ZoneExternal
}

// LocalPrincipal authenticates the stdio caller with rt's authenticator: the owner of the
// local process, who presents no credential and counts as a loopback peer.
func LocalPrincipal(ctx context.Context, rt faces.Runtime) (gateway.Principal, error) {
	creds := gateway.Credentials{Zone: gateway.ZoneLocal, Remote: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0)}
	p, err := rt.Authenticator().Authenticate(ctx, creds)
	if err != nil {
		return p, fmt.Errorf("admitting the local caller (stdio admits it as a loopback caller without a credential, which needs auth.anonymous): %w", err)
	}
	return p, nil
}
