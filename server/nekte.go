package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/gatehouse-dev/gatehouse/auth"
	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/nekte"
)

// NekteConfig is the nekte section: NEKTE on the boundary — the nekte.* methods, the agent
// card at /.well-known/nekte.json and the receipt key in /.well-known/jwks.json. Absent,
// NEKTE is off. Tasks, Contexts and Receipts are read at start (tasks belong to the
// process and outlive reloads); Catalog and Endpoint follow every reload. The fields are
// those of routing/nekte's Config, beside Endpoint.
type NekteConfig struct {
	// Endpoint is the URL the agent card announces for JSON-RPC: the externally visible
	// URL of POST /rpc, for a gateway behind a proxy that terminates TLS or rewrites paths.
	// Empty: the URL of /rpc as the card's request addressed the boundary.
	Endpoint string `yaml:"endpoint" json:"endpoint,omitempty"`
	// Tasks bounds delegated tasks (nekte.TasksConfig).
	Tasks nekte.TasksConfig `yaml:"tasks" json:"tasks"`
	// Contexts bounds context envelopes (nekte.ContextsConfig).
	Contexts nekte.ContextsConfig `yaml:"contexts" json:"contexts"`
	// Receipts configures the key that signs task receipts (nekte.ReceiptsConfig).
	Receipts nekte.ReceiptsConfig `yaml:"receipts" json:"receipts"`
	// Catalog configures the capability catalog (capability.Config).
	Catalog capability.Config `yaml:"catalog" json:"catalog"`
}

// service returns the routing/nekte configuration of the section.
func (c *NekteConfig) service() nekte.Config {
	return nekte.Config{Tasks: c.Tasks, Contexts: c.Contexts, Receipts: c.Receipts, Catalog: c.Catalog}
}

// errEndpoint refuses a nekte.endpoint that is not an absolute http(s) URL.
var errEndpoint = errors.New("must be an absolute http:// or https:// URL, e.g. https://agents.example.com/rpc")

// validateEndpoint checks nekte.endpoint (empty is valid).
func (c *NekteConfig) validateEndpoint() error {
	if c.Endpoint == "" {
		return nil
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errEndpoint
	}
	return nil
}

// nekteProblem is one problem routing/nekte's Config.Validate found, with the path of the
// key it names.
type nekteProblem struct{ path, msg string }

// nekteProblems splits what nekte.Config.Validate returned into one problem per key, each
// at nekte.<key> when its message starts with the key's dotted name (else at nekte).
func nekteProblems(err error) []nekteProblem {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]nekteProblem, 0, len(errs))
	for _, e := range errs {
		msg := strings.TrimPrefix(e.Error(), "nekte: ")
		path := "nekte"
		if key, _, _ := strings.Cut(msg, " "); strings.Contains(key, ".") && !strings.ContainsAny(key, ":()") {
			path += "." + key
		}
		out = append(out, nekteProblem{path: path, msg: msg})
	}
	return out
}

// nekteSettings are the settings of the nekte section a running service keeps until
// restart.
type nekteSettings struct {
	tasks    nekte.TasksConfig
	contexts nekte.ContextsConfig
	receipts nekte.ReceiptsConfig
}

// processSettings returns the section's settings the service keeps until restart.
func (c *NekteConfig) processSettings() nekteSettings {
	return nekteSettings{tasks: c.Tasks, contexts: c.Contexts, receipts: c.Receipts}
}

// nekteService is the process's NEKTE service (routing/nekte.Service). It lives as long
// as the Server, so delegated tasks survive reloads: every configuration with a nekte
// section routes the nekte.* methods to it through a nekte.Route of its own (routeNekte),
// which adds the configuration's catalog and agent card; the service reads the catalog of
// the configuration current at each call (currentCatalog). buildRuntime is handed it
// beside the extra targets; the server drains and closes it.
type nekteService struct {
	svc *nekte.Service
	// settings are those the service was built with; a reload that changes them is logged.
	settings nekteSettings
}

// newNekteService builds the service on the server's state store, with its capability
// Invoker, for cfg. A method of the service that Options.Targets routes already is
// refused.
func newNekteService(s *Server, cfg *NekteConfig) (*nekteService, error) {
	svc, err := nekte.New(cfg.service(), nekte.Options{
		KV:      s.kv,
		Catalog: nekte.CurrentCatalog(s.currentCatalog),
		Invoker: s.CapabilityInvoker(),
		Logger:  s.log,
		Now:     s.opts.Now,
		// The tasks gauge counts the changes this process makes (gatehouse_tasks).
		OnTaskStatus: s.metrics.TaskMoved,
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
	return &nekteService{svc: svc, settings: cfg.processSettings()}, nil
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
	case cfg.processSettings() != svc.settings:
		rt.log.Warn("nekte tasks, contexts or receipts settings changed; they take effect on restart (the catalog and the endpoint follow the reload)")
	}
	reg, err := capability.New(cfg.Catalog, capability.SourcesOf(rt.table.Targets())...)
	if err != nil {
		return fmt.Errorf("nekte.catalog: %w", err)
	}
	route := nekte.NewRoute(nekte.RouteParams{Service: svc.svc, Catalog: reg, Endpoint: cfg.Endpoint,
		Auth: cardAuth(rt.cfg.Auth), Visibility: newVisibility(rt.policy, rt.table), Logger: rt.log})
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
