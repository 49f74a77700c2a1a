package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/netutil"

	"github.com/gatehouse-dev/gatehouse/gateway"
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
}

// Server is one Gatehouse process's set of listeners and the runtime they serve.
type Server struct {
	opts Options
	log  *slog.Logger

	cur      atomic.Pointer[runtime]
	reloadMu sync.Mutex
	lastFile []byte // content of the configuration file last loaded, under reloadMu

	boundaryLn, adminLn net.Listener
	boundary, admin     *http.Server
	listen              ServerConfig // listener settings in force

	serving  atomic.Bool
	draining atomic.Bool
	ws       wsRegistry
}

// New builds the runtime for cfg and binds the boundary and admin listeners, so that
// address errors surface here and an address of port 0 is resolved before Run.
func New(cfg *Config, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, log: opts.Logger, listen: cfg.Server}
	s.ws.init()
	rt, err := buildRuntime(cfg, s.log, opts.Now, opts.Targets)
	if err != nil {
		return nil, fmt.Errorf("building configuration: %w", err)
	}
	s.setLogLevel(cfg)
	s.cur.Store(rt)

	b := cfg.Server.Boundary
	if s.boundaryLn, err = net.Listen("tcp", b.Addr); err != nil {
		return nil, fmt.Errorf("boundary listener: %w", err)
	}
	if s.adminLn, err = net.Listen("tcp", cfg.Server.Admin.Addr); err != nil {
		_ = s.boundaryLn.Close()
		return nil, fmt.Errorf("admin listener: %w", err)
	}
	s.boundaryLn = netutil.LimitListener(s.boundaryLn, b.MaxConnections)
	s.boundary = &http.Server{
		Handler:           s.boundaryHandler(),
		ReadHeaderTimeout: b.ReadHeaderTimeout,
		ReadTimeout:       b.ReadTimeout,
		IdleTimeout:       b.IdleTimeout,
		MaxHeaderBytes:    b.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.admin = &http.Server{
		Handler:           s.adminHandler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	return s, nil
}

// BoundaryAddr returns the address the boundary listener is bound to.
func (s *Server) BoundaryAddr() net.Addr { return s.boundaryLn.Addr() }

// AdminAddr returns the address the admin listener is bound to.
func (s *Server) AdminAddr() net.Addr { return s.adminLn.Addr() }

// Run serves until ctx is done, then shuts down gracefully: readiness turns to draining,
// the listeners stop accepting, and in-flight calls (HTTP and WebSocket) get up to
// server.shutdown_grace to finish. It returns nil after a clean drain.
func (s *Server) Run(ctx context.Context) error {
	errc := make(chan error, 2)
	go func() { errc <- serveHTTP(s.boundary, s.boundaryLn) }()
	go func() { errc <- serveHTTP(s.admin, s.adminLn) }()
	s.serving.Store(true)
	s.log.Info("serving", "boundary", s.BoundaryAddr().String(), "admin", s.AdminAddr().String())

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	return errors.Join(runErr, s.shutdown())
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

	var wg sync.WaitGroup
	var httpErr error
	wg.Go(func() { httpErr = s.boundary.Shutdown(ctx) })
	wsErr := s.ws.drain(ctx)
	wg.Wait()
	adminErr := s.admin.Shutdown(ctx)
	s.cur.Load().retire()
	if err := errors.Join(httpErr, wsErr, adminErr); err != nil {
		_ = s.boundary.Close()
		_ = s.admin.Close()
		return fmt.Errorf("shutdown did not finish within %s: %w", grace, err)
	}
	s.log.Info("stopped")
	return nil
}

// acquire returns the current runtime with a reference held; the caller must release it.
func (s *Server) acquire() *runtime {
	for {
		rt := s.cur.Load()
		rt.refs.Add(1)
		if s.cur.Load() == rt {
			return rt
		}
		rt.release()
	}
}

func (s *Server) setLogLevel(cfg *Config) {
	if s.opts.LogLevel == nil {
		return
	}
	if l, err := cfg.Log.ParseLevel(); err == nil {
		s.opts.LogLevel.Set(l)
	}
}
