package nekte

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

// Visibility is what a caller may see of the catalog (capability.Visibility).
type Visibility interface {
	// Filters reports whether anything is hidden from anyone.
	Filters() bool
	// Visible returns the caller's capability filter; nil when nothing is hidden.
	Visible(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol) func(capability.Capability) bool
	// Anonymous returns the filter of a caller without credentials; nil when nothing is hidden.
	Anonymous() func(capability.Capability) bool
}

// RouteParams are what a Route is built from.
type RouteParams struct {
	// Service is the process's NEKTE service, which outlives configurations.
	Service *Service
	// Catalog is the configuration's capability catalog.
	Catalog *capability.Registry
	// Endpoint is the URL the agent card announces (nekte.endpoint); "" announces the
	// endpoint the card's request addressed.
	Endpoint string
	// Auth is the authentication the agent card announces.
	Auth nk.Auth
	// Visibility decides what each caller sees of Catalog.
	Visibility Visibility
	// Logger receives the catalog's problems (LogProblems).
	Logger *slog.Logger
}

// Route is what one configuration routes the nekte.* methods to: the process's Service,
// and that configuration's catalog, agent card and view of the catalog per caller. It is
// not a gateway.Closer: a replaced configuration closes its targets, and the Service
// outlives it.
type Route struct {
	svc        *Service
	catalog    *capability.Registry
	endpoint   string
	auth       nk.Auth
	visibility Visibility
	log        *slog.Logger
	// seen is the catalog version whose problems were logged last.
	seen atomic.Pointer[string]
}

var (
	_ gateway.Target      = (*Route)(nil)
	_ gateway.Backended   = (*Route)(nil)
	_ gateway.Unretryable = (*Route)(nil)
	_ gateway.Describer   = (*Route)(nil)
)

// NewRoute returns the Route of p.
func NewRoute(p RouteParams) *Route {
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	return &Route{svc: p.Service, catalog: p.Catalog, endpoint: p.Endpoint, auth: p.Auth, visibility: p.Visibility, log: p.Logger}
}

// Catalog returns the configuration's capability catalog.
func (r *Route) Catalog() *capability.Registry { return r.catalog }

// Name implements gateway.Target.
func (r *Route) Name() string { return r.svc.Name() }

// Invoke implements gateway.Target. Under a policy, nekte.discover lists only what the
// caller may reach; every other method, and nekte.discover without a policy, goes to the
// Service.
func (r *Route) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	if call.Method == nk.MethodDiscover && r.visibility.Filters() {
		return r.discover(call)
	}
	return r.svc.Invoke(ctx, call)
}

// discover answers nekte.discover from the caller's view of the catalog: the params
// decoded as the Service decodes them, the capabilities the caller may not see left out
// before filtering and paging.
func (r *Route) discover(call *gateway.Call) (*gateway.Result, error) {
	p, o, err := capability.DecodeDiscover(call.Params)
	if err != nil {
		return nil, paramError(err)
	}
	o.Visible = r.visibility.Visible(call.Principal, call.Zone, call.Protocol)
	raw, err := r.catalog.DiscoverWith(p, o)
	if err != nil {
		return nil, gateway.AsError(err)
	}
	return gateway.NewResult(raw), nil
}

// AgentCard returns the catalog's agent card, JSON, announcing the configured endpoint
// when there is one (else endpoint, the one the request addressed) and the configured
// authentication. The card is served to anyone, so under a policy it lists only what a
// caller without credentials may see.
func (r *Route) AgentCard(endpoint string) ([]byte, error) {
	if r.endpoint != "" {
		endpoint = r.endpoint
	}
	card := r.catalog.CardFor(endpoint, r.visibility.Anonymous())
	card.Auth = r.auth
	return json.Marshal(card)
}

// Backend implements gateway.Backended through the Service.
func (r *Route) Backend(call *gateway.Call) string { return r.svc.Backend(call) }

// NotRetryable implements gateway.Unretryable through the Service.
func (r *Route) NotRetryable(call *gateway.Call) bool { return r.svc.NotRetryable(call) }

// Reaches implements gateway.Describer through the Service.
func (r *Route) Reaches(call *gateway.Call, detail bool) gateway.Reach {
	return r.svc.Reaches(call, detail)
}

// LogProblems logs what the catalog left out or renamed, once per catalog version: MCP
// catalogs load and change after the configuration is built, so it is called on every
// use of the catalog too (a cheap comparison when nothing changed).
func (r *Route) LogProblems() {
	v := r.catalog.Version()
	if last := r.seen.Load(); last != nil && *last == v {
		return
	}
	// Unless another call recorded v first, log its problems.
	if prev := r.seen.Swap(&v); prev != nil && *prev == v {
		return
	}
	for _, p := range r.catalog.Problems() {
		r.log.Warn("nekte catalog", "capability", p.ID, "source", p.Source, "problem", p.Reason, "catalog_version", v)
	}
}
