package httprpc

import (
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Route is a route of another face on the boundary listener: its HTTP method ("" for any),
// its path, and its handler.
type Route struct {
	Method  string
	Path    string
	Handler http.Handler
}

// Boundary returns the handler of the boundary listener: this face's routes (POST /rpc, the
// agent card, the OpenRPC document, the JWKS) and routes, each other face's, behind one
// router that answers an unknown path or method with a JSON-RPC error and turns a panic
// outside a call into an internal error.
func (f *Face) Boundary(routes ...Route) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	_ = e.SetTrustedProxies(nil) // the peer address is the TCP peer's; forwarding headers are not trusted
	e.Use(recoverHTTP(f.log))
	e.POST(RPCPath, f.serveRPC)
	e.GET(nekte.CardPath, f.serveAgentCard)
	e.GET(RPCPath+nekte.CardPath, f.serveAgentCard)
	e.GET(OpenRPCPath, f.serveOpenRPC)
	for _, r := range routes {
		h := gin.WrapH(r.Handler)
		if r.Method == "" {
			e.Any(r.Path, h)
		} else {
			e.Handle(r.Method, r.Path, h)
		}
	}
	e.NoRoute(func(c *gin.Context) {
		faces.WriteHTTPError(c.Writer, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "No such endpoint"), observability.NewTraceID(), faces.EncodingJSON)
	})
	e.NoMethod(func(c *gin.Context) {
		faces.WriteHTTPError(c.Writer, http.StatusMethodNotAllowed, gateway.Errorf(schemas.CodeInvalidRequest, "Method not allowed"), observability.NewTraceID(), faces.EncodingJSON)
	})
	return f.withJWKS(e)
}

// recoverHTTP turns a panic outside a call into an internal error response.
func recoverHTTP(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler { //nolint:errorlint // http.ErrAbortHandler is compared by identity, as net/http does
					panic(p) //nolint:forbidigo // re-raised so net/http aborts the response as the handler asked
				}
				log.Error("panic in HTTP handler", "path", c.Request.URL.Path, "panic", p)
				faces.WriteHTTPError(c.Writer, http.StatusInternalServerError, gateway.NewError(schemas.CodeInternal), observability.NewTraceID(), faces.EncodingJSON)
			}
		}()
		c.Next()
	}
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
