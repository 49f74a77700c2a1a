package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/auth"
	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/nekte"
)

// nekteService is the process's NEKTE service (routing/nekte.Service). It lives as long
// as the Server, so delegated tasks survive reloads: every configuration with a nekte
// section routes the nekte.* methods to it through a nekte.Route of its own (routeNekte),
// which adds the configuration's catalog and agent card; the service reads the catalog of
// the configuration current at each call (currentCatalog). buildRuntime is handed it
// beside the extra targets; the server drains and closes it.
type nekteService struct {
	svc *nekte.Service
	// built is the configuration the service was built with; a reload that changes what
	// it keeps until restart is logged (nekte.Config.NeedsRestart).
	built nekte.Config
}

// newNekteService builds the service on the server's state store, with its capability
// Invoker, for cfg. A method of the service that Options.Targets routes already is
// refused.
func newNekteService(s *Server, cfg *nekte.Section) (*nekteService, error) {
	built := cfg.Service()
	svc, err := nekte.New(built, nekte.Options{
		KV:      s.kv,
		Catalog: nekte.CurrentCatalog(s.currentCatalog),
		Invoker: s.CapabilityInvoker(),
		Logger:  s.log,
		Now:     s.opts.Now,
		// The tasks gauge counts the changes this process makes (gatehouse_tasks).
		OnTaskStatus: s.metrics.TaskMoved,
		// the operator's view of tasks (admin.tasks.*): this process's most recent ones
		RecentTasks: s.listen.Admin.Console.WithDefaults().RecentTasks,
	})
	if err != nil {
		return nil, fmt.Errorf("nekte: %w", err)
	}
	methods, _ := svc.Routes()
	for _, m := range methods {
		if prev, ok := s.opts.Targets[m]; ok {
			_ = svc.Close()
			return nil, fmt.Errorf("building configuration: method %q is served by both %q and %q", m, prev.Name(), svc.Name())
		}
	}
	return &nekteService{svc: svc, built: built}, nil
}

// currentCatalog returns the current configuration's catalog, with the configuration held
// until release is called; nil when it has NEKTE off (nekte.CurrentCatalog).
func (s *Server) currentCatalog() (*capability.Registry, func()) {
	rt := s.acquire()
	if rt.nekte == nil {
		return nil, rt.release
	}
	rt.nekte.LogProblems()
	return rt.nekte.Catalog(), rt.release
}

// drain suspends the tasks running in this process, each with a checkpoint, while their
// streams can still tell their callers (event suspended), then closes the service, which
// ends its streams so the connections carrying them can close.
func (n *nekteService) drain(ctx context.Context) error {
	return errors.Join(n.svc.SuspendAll(ctx), n.svc.Close())
}

// routeNekte builds the configuration's capability catalog from the targets its table
// routes so far and routes the nekte.* methods to svc, through a nekte.Route with the
// configuration's agent card and visibility. Without a nekte section it does nothing;
// with one but no service (the process started without NEKTE) it logs that NEKTE starts
// on restart.
func (rt *runtime) routeNekte(svc *nekteService) error {
	cfg := rt.cfg.Nekte
	switch {
	case cfg == nil:
		return nil
	case svc == nil:
		rt.log.Warn("the nekte section was added after start: NEKTE starts with the next restart")
		return nil
	case svc.built.NeedsRestart(cfg.Service()):
		rt.log.Warn("nekte tasks, contexts or receipts settings changed; they take effect on restart (the catalog and the endpoint follow the reload)")
	}
	reg, err := capability.New(cfg.Catalog, capability.SourcesOf(rt.table.Targets())...)
	if err != nil {
		return fmt.Errorf("nekte.catalog: %w", err)
	}
	route := nekte.NewRoute(nekte.RouteParams{Service: svc.svc, Catalog: reg, Endpoint: cfg.Endpoint,
		Auth: cardAuth(rt.cfg.Auth), Visibility: rt.visibility, Logger: rt.log})
	methods, _ := svc.svc.Routes()
	for _, m := range methods {
		if err := rt.table.Add(m, route); err != nil {
			return err
		}
	}
	rt.nekte = route
	route.LogProblems()
	return nil
}

// The agent card of a configuration with NEKTE is its Route's.
var _ agentCardProvider = (*nekte.Route)(nil)

// cardAuth is the authentication an agent card announces for an auth section: "none" when
// anonymous access is the only method configured, "bearer" otherwise (callers present a
// bearer token).
func cardAuth(c auth.Config) nk.Auth {
	if c.AnonymousOnly() {
		return nk.AuthNone
	}
	return nk.AuthBearer
}
