package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// mcpPath is where the boundary serves MCP's streamable HTTP transport.
const mcpPath = "/mcp"

// protectedResourcePath is where the boundary serves the OAuth protected-resource metadata
// (RFC 9728) of its MCP face; protectedResourcePath+mcpPath is the same document at the
// path RFC 9728 §3.1 derives from the resource's URL.
const protectedResourcePath = "/.well-known/oauth-protected-resource"

// protectedResource is the OAuth protected-resource metadata document (RFC 9728 §2).
type protectedResource struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
}

// handleProtectedResource serves GET protectedResourcePath (and its /mcp form): the OAuth
// protected-resource metadata of the MCP face, so MCP clients can find the issuers whose
// tokens it accepts — to anyone, like the agent card. Without the MCP face it is a 404.
func (s *Server) handleProtectedResource(c *gin.Context) {
	w, traceID := c.Writer, observability.NewTraceID()
	if s.mcp == nil {
		faces.WriteHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "MCP is not enabled"), traceID, faces.EncodingJSON)
		return
	}
	rt := s.acquire()
	doc := protectedResource{
		Resource:               faces.RequestOrigin(c.Request) + mcpPath,
		AuthorizationServers:   rt.authn.Issuers(),
		BearerMethodsSupported: []string{"header"},
		ScopesSupported:        policyScopes(rt.cfg),
	}
	rt.release()
	body, _ := json.Marshal(doc) // strings and slices of them always marshal
	h := w.Header()
	h.Set("Content-Type", faces.JSONContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-cache") // issuers and scopes change with the configuration
	h.Set("X-Trace-Id", traceID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// policyScopes returns the scopes the policy's rules require, sorted and each once; none
// without a policy.
func policyScopes(cfg *Config) []string {
	if cfg.Policy == nil {
		return nil
	}
	var out []string
	for _, r := range cfg.Policy.Rules {
		out = append(out, r.Scopes...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
