package server

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// rpcPath is where the boundary serves JSON-RPC over HTTP: the endpoint a NEKTE agent card
// advertises.
const rpcPath = "/rpc"

// The URL schemes of the endpoint an agent card announces.
const (
	schemeHTTP  = "http"
	schemeHTTPS = "https"
)

// agentCardProvider is implemented by the target that serves the nekte.* methods
// (routing/nekte): it writes the agent card, JSON, for the endpoint the request was
// addressed to. A provider configured with an endpoint of its own (behind a proxy that
// terminates TLS or rewrites paths) announces that one instead.
type agentCardProvider interface {
	AgentCard(endpoint string) ([]byte, error)
}

// agentCard returns the provider of the agent card of this configuration: the target
// nekte.discover is routed to, when it provides one; nil when NEKTE is not configured.
func (rt *runtime) agentCard() agentCardProvider {
	t, ok := rt.table.Lookup(nekte.MethodDiscover)
	if !ok {
		return nil
	}
	p, _ := t.(agentCardProvider)
	return p
}

// handleAgentCard serves GET /.well-known/nekte.json and GET /rpc/.well-known/nekte.json
// (the reference client fetches <endpoint>/.well-known/nekte.json): the agent card, to
// anyone — no credential is asked for. Without NEKTE configured it is a 404.
func (s *Server) handleAgentCard(c *gin.Context) {
	rt := s.acquire()
	defer rt.release()
	w, traceID := c.Writer, observability.NewTraceID()
	p := rt.agentCard()
	if p == nil {
		writeHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "NEKTE is not enabled"), traceID)
		return
	}
	card, err := p.AgentCard(requestEndpoint(c.Request))
	if err != nil {
		s.log.Error("writing the agent card", "trace_id", traceID, "err", err)
		writeHTTPError(w, http.StatusInternalServerError, gateway.NewError(schemas.CodeInternal), traceID)
		return
	}
	h := w.Header()
	h.Set("Content-Type", jsonContentType)
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
	return requestOrigin(r) + rpcPath
}

// requestOrigin returns the scheme (https when the connection is TLS) and Host the request
// addressed the boundary with, as scheme://host. Forwarding headers are not trusted.
func requestOrigin(r *http.Request) string {
	scheme := schemeHTTP
	if r.TLS != nil {
		scheme = schemeHTTPS
	}
	return scheme + "://" + r.Host
}

// jwksPath is where the boundary publishes the gateway's public keys.
const jwksPath = "/.well-known/jwks.json"

// withJWKS serves GET (and HEAD) jwksPath in front of next: the JSON Web Key Set of the
// keys the gateway signs with — its key ring's (auth.keyring) and the NEKTE receipt key,
// when NEKTE is on — to anyone, like the agent card. Other methods on that path are refused with 405.
func (s *Server) withJWKS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != jwksPath {
			next.ServeHTTP(w, r)
			return
		}
		traceID := observability.NewTraceID()
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeHTTPError(w, http.StatusMethodNotAllowed, gateway.Errorf(schemas.CodeInvalidRequest, "Method not allowed"), traceID)
			return
		}
		body := s.jwks()
		h := w.Header()
		h.Set("Content-Type", jsonContentType)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		h.Set("Cache-Control", "no-cache") // a key generated per process changes on restart
		h.Set("X-Trace-Id", traceID)
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}

// jwks returns the JSON Web Key Set document {"keys": [...]}.
func (s *Server) jwks() []byte {
	keys := []json.RawMessage{}
	if s.nekte != nil {
		keys = append(keys, s.nekte.svc.ReceiptKey())
	}
	keys = append(keys, s.keyRingKeys()...)
	body, _ := json.Marshal(struct {
		Keys []json.RawMessage `json:"keys"`
	}{keys}) // raw JWKs and a slice of them always marshal
	return body
}
