package httprpc

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// serveAgentCard serves GET /.well-known/nekte.json and GET /rpc/.well-known/nekte.json
// (the reference client fetches <endpoint>/.well-known/nekte.json): the agent card, to
// anyone — no credential is asked for. Without NEKTE configured it is a 404.
func (f *Face) serveAgentCard(c *gin.Context) {
	rt := f.gw.Acquire()
	defer rt.Release()
	w, traceID := c.Writer, observability.NewTraceID()
	p := rt.AgentCard()
	if p == nil {
		faces.WriteHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "NEKTE is not enabled"), traceID, faces.EncodingJSON)
		return
	}
	card, err := p.AgentCard(requestEndpoint(c.Request))
	if err != nil {
		f.log.Error("writing the agent card", "trace_id", traceID, "err", err)
		faces.WriteHTTPError(w, http.StatusInternalServerError, gateway.NewError(schemas.CodeInternal), traceID, faces.EncodingJSON)
		return
	}
	h := w.Header()
	h.Set("Content-Type", faces.JSONContentType)
	h.Set("Content-Length", strconv.Itoa(len(card)))
	h.Set("Cache-Control", "no-cache") // the catalog, and so the card, changes with the configuration
	h.Set("X-Trace-Id", traceID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(card)
}

// requestEndpoint returns the URL of the JSON-RPC endpoint as the request addressed the
// boundary: its scheme (https when the connection is TLS), its Host, and /rpc. Forwarding
// headers are not trusted; behind a proxy the card's provider announces its configured
// endpoint instead.
func requestEndpoint(r *http.Request) string {
	return faces.RequestOrigin(r) + RPCPath
}

// JWKSPath is where the boundary publishes the gateway's public keys.
const JWKSPath = "/.well-known/jwks.json"

// withJWKS serves GET (and HEAD) JWKSPath in front of next: the JSON Web Key Set of the
// keys the gateway signs with — its key ring's (auth.keyring) and the NEKTE receipt key,
// when NEKTE is on — to anyone, like the agent card. Other methods on that path are
// refused with 405.
func (f *Face) withJWKS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != JWKSPath {
			next.ServeHTTP(w, r)
			return
		}
		traceID := observability.NewTraceID()
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			faces.WriteHTTPError(w, http.StatusMethodNotAllowed, gateway.Errorf(schemas.CodeInvalidRequest, "Method not allowed"), traceID, faces.EncodingJSON)
			return
		}
		body := f.gw.JWKS()
		h := w.Header()
		h.Set("Content-Type", faces.JSONContentType)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		h.Set("Cache-Control", "no-cache") // a key generated per process changes on restart
		h.Set("X-Trace-Id", traceID)
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}
