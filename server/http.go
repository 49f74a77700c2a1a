package server

import (
	"net/http"

	a2aface "github.com/gatehouse-dev/gatehouse/faces/a2a"
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	mcpface "github.com/gatehouse-dev/gatehouse/faces/mcp"
	"github.com/gatehouse-dev/gatehouse/faces/session"
	"github.com/gatehouse-dev/gatehouse/state/blob"
)

// wsPath is where the boundary serves JSON-RPC over WebSocket.
const wsPath = "/ws"

// boundaryHandler returns the HTTP handler of the boundary listener: the JSON-RPC face's
// router (faces/httprpc), with the other faces' routes mounted on it.
func (s *Server) boundaryHandler() http.Handler {
	return s.counted(s.http.Boundary(
		httprpc.Route{Method: http.MethodGet, Path: wsPath, Handler: s.ws},
		httprpc.Route{Method: http.MethodGet, Path: session.Path, Handler: s.session}, // no session section: 404
		httprpc.Route{Method: http.MethodPost, Path: session.PathChat, Handler: http.HandlerFunc(s.session.ServeChat)},
		httprpc.Route{Method: http.MethodPost, Path: session.PathAbort, Handler: http.HandlerFunc(s.session.ServeAbort)},
		httprpc.Route{Method: http.MethodPost, Path: session.PathTask, Handler: http.HandlerFunc(s.session.ServeTask)},
		httprpc.Route{Method: http.MethodPost, Path: session.PathStatus, Handler: http.HandlerFunc(s.session.ServeStatus)},
		httprpc.Route{Path: mcpface.Path, Handler: http.HandlerFunc(s.mcp.Serve)}, // s.mcp nil: 404
		httprpc.Route{Method: http.MethodGet, Path: mcpface.ProtectedResourcePath, Handler: http.HandlerFunc(s.mcp.ServeProtectedResource)},
		httprpc.Route{Method: http.MethodGet, Path: mcpface.ProtectedResourcePath + mcpface.Path, Handler: http.HandlerFunc(s.mcp.ServeProtectedResource)},
		httprpc.Route{Method: http.MethodGet, Path: mcpface.SSEPath, Handler: http.HandlerFunc(s.mcp.ServeSSE)},
		httprpc.Route{Method: http.MethodPost, Path: mcpface.MessagePath, Handler: http.HandlerFunc(s.mcp.ServeSSE)},
		httprpc.Route{Method: http.MethodPost, Path: a2aface.Path, Handler: http.HandlerFunc(s.a2a.Serve)}, // no a2a section: 404
		httprpc.Route{Method: http.MethodGet, Path: a2aface.CardPath, Handler: http.HandlerFunc(s.a2a.ServeCard)},
		httprpc.Route{Method: http.MethodHead, Path: a2aface.CardPath, Handler: http.HandlerFunc(s.a2a.ServeCard)},
		httprpc.Route{Path: blob.EndpointPath + "*key", Handler: s.blobHandler()}, // blobs.go; no blobs section: 404
	))
}

// counted counts the boundary's requests being handled (s.handling), so that a drain can
// tell connections still answering from idle ones.
func (s *Server) counted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.handling.Add(1)
		defer s.handling.Add(-1)
		h.ServeHTTP(w, r)
	})
}
