package admin

import (
	"net/http"
	"net/http/pprof"
	"slices"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// pprofPrefix is where the Go runtime's profiles are served (net/http/pprof).
const pprofPrefix = "/debug/pprof/"

// pprofHandler serves net/http/pprof under /debug/pprof/ to callers holding scope, or 404
// when scope is "" (server.admin.pprof off). Each request is authenticated like admin
// JSON-RPC (rpc.go): the configuration's authenticator in zone operator, then the scope.
func (f *Face) pprofHandler(scope string) http.Handler {
	if scope == "" {
		return http.NotFoundHandler()
	}
	mux := http.NewServeMux()
	mux.HandleFunc(pprofPrefix, pprof.Index) // the index and the named profiles (heap, goroutine, allocs…)
	mux.HandleFunc(pprofPrefix+"cmdline", pprof.Cmdline)
	mux.HandleFunc(pprofPrefix+"profile", pprof.Profile)
	mux.HandleFunc(pprofPrefix+"symbol", pprof.Symbol)
	mux.HandleFunc(pprofPrefix+"trace", pprof.Trace)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !f.pprofAllowed(w, r, scope) {
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// pprofAllowed authenticates r in zone operator and checks it holds scope; when not, it
// answers with the gateway's JSON-RPC error body (401 with a challenge, or 403) and
// returns false.
func (f *Face) pprofAllowed(w http.ResponseWriter, r *http.Request, scope string) bool {
	rt := f.gw.Acquire()
	defer rt.Release()
	traceID := observability.NewTraceID()
	principal, err := rt.Authenticator().Authenticate(r.Context(), faces.HTTPCredentials(r, gateway.ZoneOperator))
	if err != nil {
		faces.WriteChallenge(w, gateway.AsError(err), traceID, faces.EncodingJSON, "")
		return false
	}
	if !slices.Contains(principal.Scopes, scope) {
		faces.WriteChallenge(w, gateway.NewError(schemas.CodeInsufficientScope).With("missing_scopes", []string{scope}),
			traceID, faces.EncodingJSON, "")
		return false
	}
	return true
}
