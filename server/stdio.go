package server

import (
	"context"
	"errors"
	"io"
	"time"

	mcpface "github.com/gatehouse-dev/gatehouse/faces/mcp"
)

// stdioReadyWait bounds how long ServeStdio waits for its targets (an upstream's catalog)
// before it answers, so that a client's first tools/list is complete.
const stdioReadyWait = 10 * time.Second

// ServeStdio runs the gateway for one local MCP client — a desktop agent that spawned it —
// serving the face's MCP server (the aggregated catalog; tool calls through the pipeline
// in the local trust zone) as newline-delimited JSON-RPC on in and out. It binds no
// listener: the configuration's boundary, admin and internal listeners are not served, so
// it runs beside a gateway already serving them. The one exception is the demo gRPC
// backend (server.demo_grpc), started on a free port of the same host when a gRPC route of
// cfg points at its address, with those routes (in cfg) pointed at that port.
//
// The caller presents no credential: it is authenticated as a loopback caller without one
// (mcpface.LocalPrincipal),
// so the auth section decides whether and as whom it is admitted (auth.anonymous, its tier
// and scopes); without anonymous access ServeStdio refuses to start.
//
// It serves until in ends or ctx is done, then shuts down gracefully: at the end of in,
// requests in flight get up to server.shutdown_grace to be answered. The configuration is
// read once (no reload). mcp-go keeps one stdio session per process, so at most one
// ServeStdio may run at a time.
func ServeStdio(ctx context.Context, cfg *Config, opts Options, in io.Reader, out io.Writer) error {
	demoLn, err := bindDemo(cfg, false)
	if err != nil {
		return err
	}
	s, err := newServer(cfg, opts)
	if err != nil {
		if demoLn != nil {
			_ = demoLn.Close()
		}
		return err
	}
	s.stdio, s.demoLn = true, demoLn
	stopDemo := s.startDemo()
	defer stopDemo()
	defer s.closeCore()
	rt := s.acquire()
	principal, err := mcpface.LocalPrincipal(ctx, rt)
	rt.release()
	if err != nil {
		return err
	}
	var faceCfg mcpface.Config
	if cfg.MCPFace != nil {
		faceCfg = *cfg.MCPFace
	}
	s.mcp = s.newMCPFace(faceCfg)
	s.mcp.Sync()
	s.awaitTargets(ctx, stdioReadyWait)
	s.mcp.Refresh() // the catalog as it is once ready, whatever events are still on their way

	s.log.Info("serving MCP over stdio", "demo_grpc", addrString(s.DemoGRPCAddr()))
	err = s.mcp.ServeStdio(ctx, mcpface.Stdio{In: in, Out: out, Principal: principal,
		Grace: cfg.Server.ShutdownGrace, MaxLineBytes: cfg.JSONRPC.MaxBodyBytes, MaxInFlight: faceCfg.StdioInFlight()})
	grace, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownGrace)
	defer cancel()
	return errors.Join(err, s.mcp.Shutdown(grace))
}

// awaitTargets waits until every target is ready, for at most limit.
func (s *Server) awaitTargets(ctx context.Context, limit time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		rt := s.acquire()
		problems := rt.ready(ctx)
		rt.release()
		if len(problems) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				s.log.Warn("serving with targets not ready", "targets", problems)
			}
			return
		case <-tick.C:
		}
	}
}
