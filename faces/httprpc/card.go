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
