package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
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

// nekteCore is the process's NEKTE service (routing/nekte.Service). It lives as long as
// the Server, so delegated tasks survive reloads: every configuration with a nekte section
// routes the nekte.* methods to it (through a nekteRoute of its own, which adds the
// configuration's agent card) and builds its own capability catalog, which the service
// reads through nekteCatalog. It rides into each configuration in Options.Targets, under
// its methods (buildRuntime takes it out again); it is not a gateway.Closer, because a
// replaced configuration closes its targets — the server drains and closes it.
type nekteCore struct {
	svc *nekte.Service
	// settings are those the service was built with; a reload that changes them is logged.
	settings nekteSettings
}

// newNekteCore builds the service on the server's state store, with its capability
// Invoker, for cfg.
func newNekteCore(s *Server, cfg *NekteConfig) (*nekteCore, error) {
	svc, err := nekte.New(cfg.service(), nekte.Options{
		KV:      s.kv,
		Catalog: nekteCatalog{s: s},
		Invoker: s.CapabilityInvoker(),
		Logger:  s.log,
		Now:     s.opts.Now,
		// The tasks gauge counts the changes this process makes (gatehouse_tasks).
		OnTaskStatus: s.metrics.TaskMoved,
	})
	if err != nil {
		return nil, fmt.Errorf("nekte: %w", err)
	}
	return &nekteCore{svc: svc, settings: cfg.processSettings()}, nil
}

var _ gateway.Target = (*nekteCore)(nil)

// Name implements gateway.Target.
func (n *nekteCore) Name() string { return n.svc.Name() }

// Invoke implements gateway.Target.
func (n *nekteCore) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	return n.svc.Invoke(ctx, call)
}

// The NEKTE service runs in the process: it has no backend of its own (a call it makes on a
// capability's behalf goes through the pipeline again and is judged against the backend
// it reaches), and a call that starts or resumes a task is never retried. nekteRoute has
// these methods through its nekteCore.
var (
	_ gateway.Backended   = (*nekteCore)(nil)
	_ gateway.Unretryable = (*nekteCore)(nil)
	_ gateway.Backended   = (*nekteRoute)(nil)
	_ gateway.Unretryable = (*nekteRoute)(nil)
)

// Backend implements gateway.Backended: none, the service runs in the process.
func (*nekteCore) Backend(*gateway.Call) string { return "" }

// NotRetryable implements gateway.Unretryable: a call that delegates a task, or one of the
// task methods (nekte.task.*), is never retried — the task outlives the call.
func (*nekteCore) NotRetryable(call *gateway.Call) bool {
	return call.Method == nk.MethodDelegate || strings.HasPrefix(call.Method, "nekte.task.")
}

// targets returns extra with the service added under each of its methods, for every
// configuration to route. A method extra already routes is refused.
func (n *nekteCore) targets(extra map[string]gateway.Target) (map[string]gateway.Target, error) {
	out := make(map[string]gateway.Target, len(extra)+16)
	maps.Copy(out, extra)
	methods, _ := n.svc.Routes()
	for _, m := range methods {
		if prev, ok := out[m]; ok {
			return nil, fmt.Errorf("method %q is served by both %q and %q", m, prev.Name(), n.Name())
		}
		out[m] = n
	}
	return out, nil
}

// drain suspends the tasks running in this process, each with a checkpoint, while their
// streams can still tell their callers (event suspended), then closes the service, which
// ends its streams so the connections carrying them can close.
func (n *nekteCore) drain(ctx context.Context) error {
	return errors.Join(n.svc.SuspendAll(ctx), n.svc.Close())
}

// splitNekte takes the NEKTE service out of a configuration's extra targets; nil when
// there is none (NEKTE was off when the process started).
func splitNekte(extra map[string]gateway.Target) (*nekteCore, map[string]gateway.Target) {
	var svc *nekteCore
	rest := make(map[string]gateway.Target, len(extra))
	for m, t := range extra {
		if ns, ok := t.(*nekteCore); ok {
			svc = ns
			continue
		}
		rest[m] = t
	}
	return svc, rest
}

// routeNekte builds the configuration's capability catalog from the targets its table
// routes so far and routes the nekte.* methods to svc. Without a nekte section it does
// nothing; with one but no service (the process started without NEKTE) it logs that NEKTE
// starts on restart.
func (rt *runtime) routeNekte(svc *nekteCore) error {
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
	rt.catalog = reg
	route := &nekteRoute{nekteCore: svc, catalog: reg, endpoint: cfg.Endpoint, auth: cardAuth(rt.cfg.Auth),
		visibility: newVisibility(rt.policy, rt.table)}
	methods, _ := svc.svc.Routes()
	for _, m := range methods {
		if err := rt.table.Add(m, route); err != nil {
			return err
		}
	}
	rt.logCatalogProblems()
	return nil
}

// logCatalogProblems logs what the catalog left out or renamed, once per catalog version:
// MCP catalogs load and change after the configuration is built, so it is called on every
// use of the catalog too (a cheap comparison when nothing changed).
func (rt *runtime) logCatalogProblems() {
	v := rt.catalog.Version()
	if last := rt.catalogSeen.Load(); last == nil || *last != v {
		rt.noteCatalogVersion(v)
	}
}

// noteCatalogVersion records v as the catalog version last seen and, unless another call
// recorded it first, logs its problems.
func (rt *runtime) noteCatalogVersion(v string) {
	if prev := rt.catalogSeen.Swap(&v); prev != nil && *prev == v {
		return
	}
	for _, p := range rt.catalog.Problems() {
		rt.log.Warn("nekte catalog", "capability", p.ID, "source", p.Source, "problem", p.Reason, "catalog_version", v)
	}
}

// nekteRoute is what one configuration routes the nekte.* methods to: the process's
// service, and that configuration's agent card and view of the catalog per caller.
type nekteRoute struct {
	*nekteCore
	catalog    *capability.Registry
	endpoint   string // nekte.endpoint; "" announces the endpoint the card's request addressed
	auth       nk.Auth
	visibility *visibility
}

var _ agentCardProvider = (*nekteRoute)(nil)

// Invoke implements gateway.Target. Under a policy, nekte.discover lists only what the
// caller may reach (visibility.discover); every other method, and nekte.discover without
// a policy section, goes to the service.
func (r *nekteRoute) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	if call.Method == nk.MethodDiscover && r.visibility.filters() {
		return r.visibility.discover(r.catalog, call)
	}
	return r.nekteCore.Invoke(ctx, call)
}

// AgentCard implements agentCardProvider: the catalog's card, announcing nekte.endpoint
// when configured and the authentication the configuration asks for. The card is served
// to anyone, so under a policy it lists only what a caller without credentials may see.
func (r *nekteRoute) AgentCard(endpoint string) ([]byte, error) {
	if r.endpoint != "" {
		endpoint = r.endpoint
	}
	card := r.catalog.CardFor(endpoint, r.visibility.anonymous())
	card.Auth = r.auth
	return json.Marshal(card)
}

// cardAuth is the authentication an agent card announces for an auth section: "none" when
// anonymous access is the only method configured, "bearer" otherwise (callers present a
// bearer token).
func cardAuth(c auth.Config) nk.Auth {
	if c.AnonymousOnly() {
		return nk.AuthNone
	}
	return nk.AuthBearer
}

// nekteCatalog is the service's nekte.Catalog: the capability catalog of the configuration
// current at each call, so that the process-wide service follows reloads. While NEKTE is
// off in the current configuration it holds no capabilities.
type nekteCatalog struct{ s *Server }

var _ nekte.Catalog = nekteCatalog{}

// errNoCatalog answers a catalog call while the current configuration has NEKTE off (a
// task resumed or verified across a reload that turned it off).
var errNoCatalog = gateway.Errorf(schemas.CodeMethodNotFound, "NEKTE is not enabled")

// current returns the current configuration's catalog, with the configuration held until
// release is called; nil when it has NEKTE off.
func (c nekteCatalog) current() (*capability.Registry, func()) {
	rt := c.s.acquire()
	if rt.catalog == nil {
		return nil, rt.release
	}
	rt.logCatalogProblems()
	return rt.catalog, rt.release
}

// Lookup implements nekte.Catalog.
func (c nekteCatalog) Lookup(id string) (capability.Capability, bool) {
	reg, release := c.current()
	defer release()
	if reg == nil {
		return capability.Capability{}, false
	}
	return reg.Lookup(id)
}

// Match implements nekte.Catalog.
func (c nekteCatalog) Match(query string) (capability.Capability, bool) {
	reg, release := c.current()
	defer release()
	if reg == nil {
		return capability.Capability{}, false
	}
	return reg.Match(query)
}

// DiscoverWith implements nekte.Catalog.
func (c nekteCatalog) DiscoverWith(p nk.DiscoverParams, o capability.DiscoverOptions) (json.RawMessage, error) {
	reg, release := c.current()
	defer release()
	if reg == nil {
		return nil, errNoCatalog
	}
	return reg.DiscoverWith(p, o)
}

// Invoke implements nekte.Catalog.
func (c nekteCatalog) Invoke(ctx context.Context, inv capability.Invoker, p nk.InvokeParams) (*nk.InvokeResult, error) {
	reg, release := c.current()
	defer release()
	if reg == nil {
		return nil, errNoCatalog
	}
	return reg.Invoke(ctx, inv, p)
}

// Observe implements nekte.Catalog.
func (c nekteCatalog) Observe(id string, d time.Duration, tokens int) {
	reg, release := c.current()
	defer release()
	if reg != nil {
		reg.Observe(id, d, tokens)
	}
}

// What NEKTE calls reach (policy subjects, metric labels): the service itself.

var _ gateway.Describer = (*nekteCore)(nil)

// Reaches implements gateway.Describer: every call of the service (and of a nekteRoute,
// which carries it) reaches NEKTE; a capability's own call goes through the pipeline again
// and is described by the target it reaches.
func (n *nekteCore) Reaches(*gateway.Call, bool) gateway.Reach {
	return gateway.Reach{Kind: gateway.ReachNekte}
}
