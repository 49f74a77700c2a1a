package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/net/netutil"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/faces"
	a2aface "github.com/gatehouse-dev/gatehouse/faces/a2a"
	adminface "github.com/gatehouse-dev/gatehouse/faces/admin"
	grpcface "github.com/gatehouse-dev/gatehouse/faces/grpc"
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	mcpface "github.com/gatehouse-dev/gatehouse/faces/mcp"
	"github.com/gatehouse-dev/gatehouse/faces/session"
	"github.com/gatehouse-dev/gatehouse/faces/ws"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Options are the parts of a Server that do not come from the configuration file.
type Options struct {
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// LogLevel, when set, is updated from log.level on every reload.
	LogLevel *slog.LevelVar
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Overrides are applied to every configuration loaded by ReloadFile.
	Overrides ListenOverrides
	// Targets are routed beside the configured ones (method → target) in every
	// configuration; for embedders and tests.
	Targets map[string]gateway.Target
	// State, when set, is the state store instead of the one the state section names; the
	// caller owns it (the server does not close it). For embedders, and tests that run
	// several servers as replicas sharing one store.
	State state.KV
	// SpanExporter, when set, receives the spans of the tracing section instead of the OTLP
	// exporter it describes (tests, embedders); the caller owns it. Without a tracing
	// section nothing is traced.
	SpanExporter sdktrace.SpanExporter
}

// Server is one Gatehouse process's set of listeners and the runtime they serve.
type Server struct {
	opts Options
	log  *slog.Logger

	cur      atomic.Pointer[runtime]
	reloadMu sync.Mutex
	// lastReload is the last reload's outcome, for admin.status; nil before the first.
	lastReload atomic.Pointer[adminface.ReloadStatus]
	lastFile   []byte // content of the configuration file last loaded, under reloadMu

	boundaryLn, adminLn net.Listener
	boundary, admin     *http.Server
	internalLn          net.Listener   // nil when the internal listener is off
	demoLn              net.Listener   // nil when the demo gRPC backend is off
	grpc                *grpcface.Face // nil when the internal listener is off
	listen              ServerConfig   // listener settings in force

	// kv is the state store, opened once per process: state outlives reloads.
	kv       state.KV
	ownKV    bool // kv was opened by the server, which closes it
	stateCfg state.Config
	// stdio is set when the server speaks MCP over stdin and stdout only (ServeStdio).
	stdio bool

	// keyring is the gateway's signing key ring, nil without auth.keyring; opened at start
	// and anew on every reload, closed at shutdown before the state store.
	keyring atomic.Pointer[auth.KeyRing]
	// revocations is the revocation list, over kv: opened at start (re-configured on
	// reload), closed at shutdown before the state store.
	revocations *auth.Revocations
	// liveness re-checks long-lived connections against revocations and their expiry.
	liveness *auth.Liveness

	mcp   *mcpface.Face // nil when the MCP face is off
	a2a   *a2aface.Face // the A2A face; it answers 404 while the configuration has no a2a section
	blobs *blobService  // nil without a blobs section (blobs.go)
	nekte *nekteService // nil when NEKTE was off at start
	// agents is the agent link's hub, nil without an agents section at start (agentlink.go).
	agents *agentlink.Hub
	// metrics are the process's metrics, kept across reloads; nil when metrics are off.
	metrics *observability.Metrics
	// tracing is the tracer provider of the current configuration's tracing section, nil
	// without one; built at start, anew on a reload that changes the section, flushed and
	// shut down at the end (tracing.go). Under reloadMu.
	tracing *observability.SharedTracing

	serving atomic.Bool
	// servingSince is when Run started serving (Unix ns) and settled is set once every
	// target has been up: until then, or server.reload.ready_timeout after the start,
	// readiness wants every target up (settling).
	servingSince atomic.Int64
	settled      atomic.Bool
	draining     atomic.Bool
	http         *httprpc.Face    // the JSON-RPC face over HTTP, whose router the boundary serves
	ws           *ws.Face         // the JSON-RPC face over WebSocket
	session      *session.Face    // session RPC at /session (WebSocket and HTTP+SSE)
	fresh        faces.FreshConns // boundary connections without a request yet, closed at drain
	tls          listenersTLS     // the listeners' TLS sources (tls.go)
	// calls is the context every boundary request derives from; shutdown cancels it with
	// gateway.ErrShuttingDown just before the grace ends, so that calls still running are
	// answered with a typed error rather than cut off with their connection.
	calls     context.Context
	stopCalls context.CancelCauseFunc
	handling  atomic.Int64 // boundary requests being handled (http.go)
}

// New builds the runtime for cfg and binds the boundary and admin listeners, so that
// address errors surface here and an address of port 0 is resolved before Run.
func New(cfg *Config, opts Options) (*Server, error) {
	tlsSources, err := openListenersTLS(cfg.Server, opts.Logger) // tls.go
	if err != nil {
		return nil, err
	}
	var demoLn net.Listener
	if demoOnFreePort(cfg) {
		ln, err := bindDemo(cfg, true)
		if err != nil {
			return nil, err
		}
		demoLn = ln
	}
	s, err := newServer(cfg, opts)
	if err != nil {
		if demoLn != nil {
			_ = demoLn.Close()
		}
		return nil, err
	}
	s.demoLn, s.tls = demoLn, tlsSources
	err = s.openBlobs(cfg) // blobs.go
	if err == nil {
		err = s.listenAll(cfg.Server)
	}
	if err != nil {
		if demoLn != nil {
			_ = demoLn.Close()
		}
		s.closeCore()
		return nil, err
	}
	s.issueBlobs()
	if cfg.MCPFace != nil {
		if cfg.MCPFace.SessionKey == "" {
			s.log.Info("mcp_face.session_key is not set: MCP sessions are signed with a random key and end when this process does")
		}
		s.mcp = s.newMCPFace(*cfg.MCPFace)
		s.mcp.Sync()
	}
	s.a2a = s.newA2AFace() // a2awire.go
	b := cfg.Server.Boundary
	if in := cfg.Server.Internal; in != nil {
		s.grpc = s.newGRPCFace(in.Config) // grpcwire.go
	}
	s.boundaryLn = netutil.LimitListener(s.boundaryLn, b.MaxConnections)
	s.calls, s.stopCalls = context.WithCancelCause(context.Background())
	s.boundary = &http.Server{
		Handler:           s.boundaryHandler(),
		BaseContext:       func(net.Listener) context.Context { return s.calls },
		ConnState:         s.fresh.Track,
		ReadHeaderTimeout: b.ReadHeaderTimeout,
		ReadTimeout:       b.ReadTimeout,
		IdleTimeout:       b.IdleTimeout,
		MaxHeaderBytes:    httpMaxHeaderBytes(b.MaxHeaderBytes),
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		TLSConfig:         serverConfig(s.tls.boundary), // tls.go
		Protocols:         boundaryProtocols(b),
	}
	s.admin = &http.Server{
		Handler:           s.adminHandler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		TLSConfig:         serverConfig(s.tls.admin),
	}
	return s, nil
}

// newServer builds what every way of serving needs: the state store, the NEKTE service
// when cfg has a nekte section (it lives on it, as long as the process), and the runtime
// of cfg.
func newServer(cfg *Config, opts Options) (_ *Server, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, log: opts.Logger, listen: cfg.Server, stateCfg: cfg.State}
	s.http = httprpc.New(httpGateway{s}, s.log)
	s.ws = ws.New(wsGateway{s}, s.log)
	s.session = session.New(sessionGateway{s}, s.log)
	s.startMetrics(cfg)
	// What is opened is closed again, in reverse, when a later step fails.
	var undo []func()
	defer func() {
		if err != nil {
			for _, f := range slices.Backward(undo) {
				f()
			}
		}
	}()
	if s.kv = opts.State; s.kv == nil {
		kv, err := state.Open(cfg.State)
		if err != nil {
			return nil, fmt.Errorf("state: %w", err)
		}
		s.kv, s.ownKV = kv, true
	}
	undo = append(undo, s.closeState)
	ring, err := s.openKeyRing(cfg.Auth.KeyRing)
	if err != nil {
		return nil, fmt.Errorf("building configuration: %w", err)
	}
	s.keyring.Store(ring)
	undo = append(undo, func() { s.swapKeyRing(nil) })
	if err := s.openRevocations(cfg.Auth.Revocation); err != nil {
		return nil, fmt.Errorf("building configuration: %w", err)
	}
	undo = append(undo, s.closeRevocations)
	if err := s.startNekte(cfg); err != nil {
		return nil, err
	}
	undo = append(undo, func() { s.closeNekte(context.Background()) })
	if err := s.startAgents(cfg); err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	undo = append(undo, func() { s.closeAgents(context.Background()) })
	if s.tracing, err = s.tracingFor(cfg); err != nil {
		return nil, fmt.Errorf("building configuration: %w", err)
	}
	undo = append(undo, s.closeTracing)
	rt, err := buildRuntime(cfg, nil, s.process(), nil)
	if err != nil {
		return nil, fmt.Errorf("building configuration: %w", err)
	}
	rt.trace = s.tracing.Hold()
	rt.pipe = newPipeline(rt)
	s.setLogLevel(cfg)
	s.cur.Store(rt)
	return s, nil
}

// startNekte builds the NEKTE service when cfg has a nekte section; every configuration
// with one routes it (buildRuntime).
func (s *Server) startNekte(cfg *Config) error {
	if cfg.Nekte == nil {
		return nil
	}
	n, err := newNekteService(s, cfg.Nekte)
	if err != nil {
		return err
	}
	s.nekte = n
	return nil
}

// closeNekte suspends the NEKTE service's running tasks and closes it, when there is one.
func (s *Server) closeNekte(ctx context.Context) {
	if s.nekte == nil {
		return
	}
	if err := s.nekte.drain(ctx); err != nil {
		s.log.Warn("suspending NEKTE tasks", "err", err)
	}
}

// closeCore retires the runtime, closes the NEKTE service (suspending what still runs), the
// revocation list, the key ring and then the state store, if the server opened it.
func (s *Server) closeCore() {
	s.closeNekte(context.Background())
	s.closeAgents(context.Background())
	s.cur.Load().retire()
	s.closeTracing() // after the runtime: the spans of calls it answered are flushed
	s.closeRevocations()
	s.swapKeyRing(nil)
	s.closeState()
}

// closeState closes the state store, if the server opened it.
func (s *Server) closeState() {
	if !s.ownKV {
		return
	}
	if err := s.kv.Close(); err != nil {
		s.log.Warn("closing the state store", "err", err)
	}
}

// buildVersion is the module version the binary was built from, "dev" for a local build.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// listenAll binds every configured listener; on failure it closes those already bound.
func (s *Server) listenAll(cfg ServerConfig) error {
	type want struct {
		name string
		addr string
		ln   *net.Listener
	}
	wants := []want{{"boundary", cfg.Boundary.Addr, &s.boundaryLn}, {"admin", cfg.Admin.Addr, &s.adminLn}}
	if cfg.Internal != nil {
		wants = append(wants, want{"internal", cfg.Internal.Addr, &s.internalLn})
	}
	if cfg.DemoGRPC != nil && s.demoLn == nil {
		wants = append(wants, want{"demo gRPC backend", cfg.DemoGRPC.Addr, &s.demoLn})
	}
	for i, w := range wants {
		ln, err := net.Listen("tcp", w.addr)
		if err != nil {
			for _, bound := range wants[:i] {
				_ = (*bound.ln).Close()
				*bound.ln = nil
			}
			return fmt.Errorf("%s listener: %w", w.name, err)
		}
		*w.ln = ln
	}
	return nil
}

// BoundaryAddr returns the address the boundary listener is bound to.
func (s *Server) BoundaryAddr() net.Addr { return s.boundaryLn.Addr() }

// AdminAddr returns the address the admin listener is bound to.
func (s *Server) AdminAddr() net.Addr { return s.adminLn.Addr() }

// InternalAddr returns the address of the internal gRPC listener, nil when it is off.
func (s *Server) InternalAddr() net.Addr {
	if s.internalLn == nil {
		return nil
	}
	return s.internalLn.Addr()
}

// Run serves until ctx is done, then shuts down gracefully: readiness turns to draining,
// the listeners stop accepting, and in-flight calls (HTTP and WebSocket) get up to
// server.shutdown_grace to finish. It returns nil after a clean drain.
func (s *Server) Run(ctx context.Context) error {
	errc := make(chan error, 3)
	go func() { errc <- serveListener(s.boundary, s.boundaryLn) }() // tls.go
	go func() { errc <- serveListener(s.admin, s.adminLn) }()
	healthCtx, stopHealth := context.WithCancel(context.Background())
	healthDone := make(chan struct{})
	if s.grpc != nil {
		go func() { errc <- s.grpc.Serve(s.internalLn) }()
		go func() { defer close(healthDone); s.grpc.WatchHealth(healthCtx) }()
	} else {
		close(healthDone)
	}
	defer func() { stopHealth(); <-healthDone }()
	demoDone := s.startDemo()
	defer demoDone()
	s.servingSince.Store(time.Now().UnixNano())
	s.serving.Store(true)
	s.log.Info("serving", "boundary", s.BoundaryAddr().String(), "admin", s.AdminAddr().String(), "internal", addrString(s.InternalAddr()),
		"boundary_scheme", scheme(s.tls.boundary), "admin_scheme", scheme(s.tls.admin), "internal_tls", s.tls.internal != nil)

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	return errors.Join(runErr, s.shutdown())
}

// startDemo serves the demo calculator backend, if configured; the returned function stops
// it (after the gateway has drained, so calls in flight to it can finish).
func (s *Server) startDemo() func() {
	if s.demoLn == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- demo.ServeCalculator(ctx, s.demoLn) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			s.log.Warn("demo gRPC backend", "err", err)
		}
	}
}

// DemoGRPCAddr returns the address of the demo gRPC backend, nil when it is off.
func (s *Server) DemoGRPCAddr() net.Addr {
	if s.demoLn == nil {
		return nil
	}
	return s.demoLn.Addr()
}

func addrString(a net.Addr) string {
	if a == nil {
		return "off"
	}
	return a.String()
}

func serveHTTP(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// shutdown drains the server within the grace period.
func (s *Server) shutdown() error {
	s.draining.Store(true)
	grace := s.listen.ShutdownGrace
	s.log.Info("draining", "grace", grace.String())
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if s.stopCalls != nil {
		cutOff := time.AfterFunc(grace-shutdownAnswerTime(grace), func() { s.stopCalls(gateway.ErrShuttingDown) })
		defer cutOff.Stop()
	}

	// NEKTE tasks first: each is suspended with a checkpoint while the connections of its
	// streams are still open to carry the news, then the streams end, so the connections
	// below can close.
	s.a2a.Close() // push notifications: their workers, retries and task watchers stop
	s.closeNekte(ctx)
	s.closeAgents(ctx) // tasks on agents finish, then the agents' streams end, so gRPC can stop
	var wg sync.WaitGroup
	var httpErr error
	wg.Go(func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			httpErr = s.boundary.Shutdown(ctx)
			// Shutdown notices idle connections only at its next poll (up to 500ms apart):
			// when every request has been answered — the cut-off ones too — the drain is
			// complete, and what is left open is idle.
			if errors.Is(httpErr, context.DeadlineExceeded) && s.handling.Load() == 0 {
				_ = s.boundary.Close()
				httpErr = nil
			}
		}()
		s.fresh.CloseUntil(done)
	})
	if s.grpc != nil {
		s.grpc.HealthShutdown() // NOT_SERVING for every service while draining
		wg.Go(func() { s.grpc.GracefulStop(ctx) })
	}
	if s.mcp != nil {
		wg.Go(func() {
			if err := s.mcp.Shutdown(ctx); err != nil {
				s.log.Warn("closing MCP sessions", "err", err)
			}
		})
	}
	wsErr := errors.Join(s.ws.Drain(ctx), s.session.Drain(ctx))
	wg.Wait()
	adminErr := s.admin.Shutdown(ctx)
	s.closeCore()
	if err := errors.Join(httpErr, wsErr, adminErr); err != nil {
		_ = s.boundary.Close()
		_ = s.admin.Close()
		return fmt.Errorf("shutdown did not finish within %s: %w", grace, err)
	}
	s.log.Info("stopped")
	return nil
}

// shutdownAnswerTime is how long before the end of the shutdown grace the calls still
// running are told to stop, so that they are answered (SHUTTING_DOWN, grace_ended) before
// their connections close: a tenth of the grace, at most a second.
func shutdownAnswerTime(grace time.Duration) time.Duration {
	return min(grace/10, time.Second)
}

func (s *Server) setLogLevel(cfg *Config) {
	if s.opts.LogLevel == nil {
		return
	}
	if l, err := cfg.Log.ParseLevel(); err == nil {
		s.opts.LogLevel.Set(l)
	}
}
