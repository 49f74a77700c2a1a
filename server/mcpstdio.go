package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/gateway"
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
// The caller presents no credential: it is authenticated as a loopback caller without one,
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
	principal, err := s.localPrincipal(ctx)
	if err != nil {
		return err
	}
	var faceCfg MCPFaceConfig
	if cfg.MCPFace != nil {
		faceCfg = *cfg.MCPFace
	}
	s.mcp = newMCPFace(s, faceCfg, buildVersion())
	s.mcp.sync()
	s.awaitTargets(ctx, stdioReadyWait)
	s.mcp.publish(s.mcp.target()) // the catalog as it is once ready, whatever events are still on their way

	err = s.listenStdio(ctx, principal, newStdioPipe(ctx, in, out, cfg.Server.ShutdownGrace, cfg.JSONRPC.MaxBodyBytes))
	grace, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownGrace)
	defer cancel()
	return errors.Join(err, s.mcp.shutdown(grace))
}

// listenStdio serves the face's MCP server on pipe as principal, in the local zone, until
// the input ends or ctx is done (both a normal end).
func (s *Server) listenStdio(ctx context.Context, principal gateway.Principal, pipe *stdioPipe) error {
	stdio := mcpserver.NewStdioServer(s.mcp.srv)
	stdio.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelError))
	stdio.SetContextFunc(func(ctx context.Context) context.Context {
		return context.WithValue(context.WithValue(ctx, principalKey{}, principal), zoneKey{}, gateway.ZoneLocal)
	})
	s.log.Info("serving MCP over stdio", "demo_grpc", addrString(s.DemoGRPCAddr()))
	err := stdio.Listen(ctx, pipe, pipe)
	switch {
	case ctx.Err() != nil: // Listen reports the context's end as its error: a normal end
		s.log.Info("stopping on a signal")
		err = nil
	case err == nil:
		s.log.Info("stdin closed: stopping")
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

// localPrincipal authenticates the stdio caller: the owner of the local process, who
// presents no credential and counts as a loopback peer.
func (s *Server) localPrincipal(ctx context.Context) (gateway.Principal, error) {
	rt := s.acquire()
	defer rt.release()
	creds := gateway.Credentials{Zone: gateway.ZoneLocal, Remote: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0)}
	p, err := rt.auth.Authenticate(ctx, creds)
	if err != nil {
		return p, fmt.Errorf("admitting the local caller (stdio admits it as a loopback caller without a credential, which needs auth.anonymous): %w", err)
	}
	return p, nil
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

// stdioPipe stands between the client's streams and mcp-go's stdio server. It follows the
// requests read and the responses written, so that at the end of the input the requests in
// flight can be answered before the input is reported closed (mcp-go cancels whatever is
// still running as soon as it sees the end of its input).
type stdioPipe struct {
	in    io.Reader
	out   io.Writer
	grace time.Duration
	limit int64 // longest line followed; the ids of longer ones are not tracked

	ctx    context.Context // ends the wait for answers (a signal)
	eof    bool            // the input ended; reported after the answers
	inLine lineSplitter

	writeMu sync.Mutex // mcp-go writes responses and its own requests from several goroutines
	outLine lineSplitter

	mu      sync.Mutex
	pending map[string]struct{} // ids of requests read and not answered yet
	drained chan struct{}       // signalled when pending becomes empty
}

// newStdioPipe returns a pipe whose wait for answers also ends with ctx.
func newStdioPipe(ctx context.Context, in io.Reader, out io.Writer, grace time.Duration, limit int64) *stdioPipe {
	return &stdioPipe{in: in, out: out, grace: grace, limit: limit, ctx: ctx,
		pending: map[string]struct{}{}, drained: make(chan struct{}, 1)}
}

// Read reads the client's input; at its end it waits for the answers to every request
// read, up to the grace period, before reporting io.EOF.
func (p *stdioPipe) Read(b []byte) (int, error) {
	if p.eof {
		p.awaitAnswers()
		return 0, io.EOF
	}
	n, err := p.in.Read(b)
	p.inLine.feed(b[:n], p.limit, p.request)
	if errors.Is(err, io.EOF) {
		p.eof = true
		if n > 0 {
			return n, nil // let the last line be handled before the end is reported
		}
		p.awaitAnswers()
	}
	return n, err
}

// Write writes mcp-go's output to the client, noting the responses.
func (p *stdioPipe) Write(b []byte) (int, error) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	n, err := p.out.Write(b)
	p.outLine.feed(b[:n], p.limit, p.response)
	return n, err
}

// rpcHead is what the pipe reads of a message: whether it is a request or a response, and
// its id.
type rpcHead struct {
	ID     any     `json:"id"`
	Method *string `json:"method"`
}

func headOf(line []byte) (rpcHead, string, bool) {
	var h rpcHead
	if json.Unmarshal(line, &h) != nil || h.ID == nil {
		return h, "", false
	}
	id, err := json.Marshal(h.ID) // a canonical form: 1.0 and 1 are one id
	return h, string(id), err == nil
}

func (p *stdioPipe) request(line []byte) {
	if h, id, ok := headOf(line); ok && h.Method != nil {
		p.mu.Lock()
		p.pending[id] = struct{}{}
		p.mu.Unlock()
	}
}

func (p *stdioPipe) response(line []byte) {
	h, id, ok := headOf(line)
	if !ok || h.Method != nil {
		return
	}
	p.mu.Lock()
	delete(p.pending, id)
	empty := len(p.pending) == 0
	p.mu.Unlock()
	if empty {
		select {
		case p.drained <- struct{}{}:
		default:
		}
	}
}

// awaitAnswers waits until no request read is unanswered, the grace period passes, or the
// pipe's context ends.
func (p *stdioPipe) awaitAnswers() {
	timer := time.NewTimer(p.grace)
	defer timer.Stop()
	for {
		p.mu.Lock()
		n := len(p.pending)
		p.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-p.drained:
		case <-timer.C:
			return
		case <-p.ctx.Done():
			return
		}
	}
}

// lineSplitter cuts a byte stream into lines, keeping at most limit bytes of one.
type lineSplitter struct {
	buf      []byte
	overlong bool
}

// feed hands every complete line of b (with what came before) to fn; a line longer than
// limit is skipped.
func (l *lineSplitter) feed(b []byte, limit int64, fn func([]byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if !l.overlong && int64(len(l.buf)+len(chunk)) <= limit {
			l.buf = append(l.buf, chunk...)
		} else {
			l.overlong, l.buf = true, l.buf[:0]
		}
		if i < 0 {
			return
		}
		if !l.overlong {
			fn(l.buf)
		}
		l.buf, l.overlong, b = l.buf[:0], false, b[i+1:]
	}
}
