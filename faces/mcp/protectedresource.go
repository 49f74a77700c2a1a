package mcpface

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Path is where the boundary serves MCP's streamable HTTP transport.
const Path = "/mcp"

// ProtectedResourcePath is where the boundary serves the OAuth protected-resource metadata
// (RFC 9728) of its MCP face; ProtectedResourcePath+Path is the same document at the
// path RFC 9728 §3.1 derives from the resource's URL.
const ProtectedResourcePath = "/.well-known/oauth-protected-resource"

// protectedResource is the OAuth protected-resource metadata document (RFC 9728 §2).
type protectedResource struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
}

// ServeProtectedResource serves GET ProtectedResourcePath (and its /mcp form): the OAuth
// protected-resource metadata of the MCP face, so MCP clients can find the issuers whose
// tokens it accepts — to anyone, like the agent card. Without the MCP face (f is nil) it
// is a 404.
func (f *Face) ServeProtectedResource(w http.ResponseWriter, r *http.Request) {
	traceID := observability.NewTraceID()
	if f == nil {
		faces.WriteHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "MCP is not enabled"), traceID, faces.EncodingJSON)
		return
	}
	rt := f.gw.Acquire()
	doc := protectedResource{
		Resource:               faces.RequestOrigin(r) + Path,
		AuthorizationServers:   rt.Issuers(),
		BearerMethodsSupported: []string{"header"},
		ScopesSupported:        rt.Scopes(),
	}
	rt.Release()
	body, _ := json.Marshal(doc) // strings and slices of them always marshal
	h := w.Header()
	h.Set("Content-Type", faces.JSONContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-cache") // issuers and scopes change with the configuration
	h.Set("X-Trace-Id", traceID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
