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

// OpenRPCPath is where the boundary publishes the OpenRPC document of a caller without
// credentials.
const OpenRPCPath = "/openrpc.json"

// OpenRPCProvider writes the configuration's OpenRPC document as a caller without
// credentials sees it (routing/capability/openrpc): what rpc.discover answers such a caller.
type OpenRPCProvider interface {
	OpenRPC() []byte
}

// serveOpenRPC serves GET /openrpc.json: the OpenRPC document of a caller without
// credentials, to anyone — under a policy it lists only what such a caller may call. A
// caller with credentials asks rpc.discover for its own. Without a provider it is a 404.
func (f *Face) serveOpenRPC(c *gin.Context) {
	rt := f.gw.Acquire()
	defer rt.Release()
	w, traceID := c.Writer, observability.NewTraceID()
	p := rt.OpenRPC()
	if p == nil {
		faces.WriteHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "No OpenRPC document"), traceID, faces.EncodingJSON)
		return
	}
	doc := p.OpenRPC()
	h := w.Header()
	h.Set("Content-Type", faces.JSONContentType)
	h.Set("Content-Length", strconv.Itoa(len(doc)))
	h.Set("Cache-Control", "no-cache") // the catalog, and so the document, changes with the configuration
	h.Set("X-Trace-Id", traceID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc)
}
