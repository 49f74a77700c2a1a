package admin

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/auth/approval"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/resilience"
)

// Gateway is what the face sees of the gateway.
type Gateway interface {
	// Acquire returns the configuration in force, held until its Release.
	Acquire() Runtime
	// Serving reports whether the gateway has started serving.
	Serving() bool
	// Draining reports whether the gateway is shutting down.
	Draining() bool
	// PingState reports whether the state store answers; nil for a store that cannot be
	// out of reach (the embedded one).
	PingState(ctx context.Context) error
	// StateBackend names the state backend in use.
	StateBackend() string
	// Revocations returns the process's revocation list, which admin.revocations.* edits.
	Revocations() *auth.Revocations
	// KeyRing returns the gateway's signing key ring, which admin.keys.* lists and rotates;
	// nil without auth.keyring.
	KeyRing() *auth.KeyRing
	// Metrics returns the handler of the process's Prometheus metrics, nil when metrics
	// are off. The face asks for it once, when it is built.
	Metrics() http.Handler
	// PprofScope is the scope a caller of /debug/pprof/ must hold, "" when the profiles
	// are not served (server.admin.pprof off). The face asks for it once, when it is built.
	PprofScope() string
}

// Runtime is one configuration as this face sees it.
type Runtime interface {
	faces.Runtime
	// Health reports what the configuration's targets can serve, for /readyz.
	Health(ctx context.Context) Health
	// TrippedBreakers returns the breakers that are open or half-open; nil when there are
	// none or no breakers section.
	TrippedBreakers() []resilience.BreakerState
	// ApprovalStore returns the store of the calls waiting for an operator's approval.
	ApprovalStore() approval.Store
	// ApprovalScope is the scope a caller of admin.approvals.* must hold.
	ApprovalScope() string
}

// Face is the operator listener's face. It outlives configurations: each request runs on
// the configuration in force when it arrives.
type Face struct {
	gw  Gateway
	ops Operations // nil when gw does not implement it: no operator methods, no console
	// console is the operator console, nil when off (console.go).
	console *console
	log     *slog.Logger
	mux     *http.ServeMux
}

var _ http.Handler = (*Face)(nil)

// New returns the face serving gw's configurations; log receives what fails outside a call.
// /debug/pprof/ (when on) asks for the operator scope, like admin JSON-RPC. The probes and /metrics ask for no credential, like a scraper and a kubelet expect: the
// admin listener is the operator's (loopback by default) and they reveal no call's content.
func New(gw Gateway, log *slog.Logger) *Face {
	f := &Face{gw: gw, log: log, mux: http.NewServeMux()}
	f.ops, _ = gw.(Operations)
	f.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSONStatus(w, http.StatusOK, map[string]any{statusKey: "ok"})
	})
	f.mux.HandleFunc("GET /readyz", f.serveReady)
	f.mux.Handle("GET /metrics", metricsHandler(gw.Metrics()))
	f.mux.HandleFunc("POST /rpc", f.serveRPC)                  // admin JSON-RPC: admin.approvals.*, admin.revocations.*, admin.keys.* (rpc.go)
	f.mux.Handle(pprofPrefix, f.pprofHandler(gw.PprofScope())) // net/http/pprof, operator scope (pprof.go)
	f.routeConsole()                                           // GET /console, /console/events when server.admin.console.enabled (console.go)
	return f
}

// ServeHTTP serves one request of the admin listener.
func (f *Face) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.mux.ServeHTTP(w, r) }

// metricsHandler serves /metrics with h, or 404 when metrics are off (h nil).
func metricsHandler(h http.Handler) http.Handler {
	if h == nil {
		return http.NotFoundHandler()
	}
	return h
}
