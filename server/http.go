package server

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// boundaryHandler returns the HTTP handler of the boundary listener: the JSON-RPC face's
// router (faces/httprpc), with the other faces' routes mounted on it.
func (s *Server) boundaryHandler() http.Handler {
	return s.http.Boundary(
		httprpc.Route{Method: http.MethodGet, Path: "/ws", Handler: s.ws},
		httprpc.Route{Path: mcpPath, Handler: ginHandler(s.handleMCP)},
		httprpc.Route{Method: http.MethodGet, Path: protectedResourcePath, Handler: ginHandler(s.handleProtectedResource)},
		httprpc.Route{Method: http.MethodGet, Path: protectedResourcePath + mcpPath, Handler: ginHandler(s.handleProtectedResource)},
		httprpc.Route{Method: http.MethodGet, Path: mcpSSEPath, Handler: ginHandler(s.handleMCPSSE)},
		httprpc.Route{Method: http.MethodPost, Path: mcpMessagePath, Handler: ginHandler(s.handleMCPSSE)},
	)
}

// ginHandler adapts a handler written for gin to http.Handler, for the router to mount it.
func ginHandler(h gin.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := gin.CreateTestContext(w)
		c.Request = r
		h(c)
	})
}

// handleMCP serves the MCP face, when it is on.
func (s *Server) handleMCP(c *gin.Context) {
	if s.mcp == nil {
		faces.WriteHTTPError(c.Writer, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "The MCP face is not enabled"), observability.NewTraceID(), faces.EncodingJSON)
		return
	}
	s.mcp.serve(c)
}
