package server

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/codecs/sse"
	mcpface "github.com/gatehouse-dev/gatehouse/faces/mcp"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// boundaryHandler returns the HTTP handler of the boundary listener.
func (s *Server) boundaryHandler() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	_ = e.SetTrustedProxies(nil) // the peer address is the TCP peer's; forwarding headers are not trusted
	e.Use(s.recoverHTTP)
	e.POST(rpcPath, s.handleRPC)
	e.GET(nekte.CardPath, s.handleAgentCard)
	e.GET(rpcPath+nekte.CardPath, s.handleAgentCard)
	e.GET("/ws", s.handleWS)
	e.Any(mcpface.Path, func(c *gin.Context) { s.mcp.Serve(c) }) // s.mcp nil: 404
	e.GET(mcpface.ProtectedResourcePath, func(c *gin.Context) { s.mcp.ServeProtectedResource(c) })
	e.GET(mcpface.ProtectedResourcePath+mcpface.Path, func(c *gin.Context) { s.mcp.ServeProtectedResource(c) })
	e.GET(mcpface.SSEPath, func(c *gin.Context) { s.mcp.ServeSSE(c) })
	e.POST(mcpface.MessagePath, func(c *gin.Context) { s.mcp.ServeSSE(c) })
	e.NoRoute(func(c *gin.Context) {
		writeHTTPError(c.Writer, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "No such endpoint"), observability.NewTraceID())
	})
	e.NoMethod(func(c *gin.Context) {
		writeHTTPError(c.Writer, http.StatusMethodNotAllowed, gateway.Errorf(schemas.CodeInvalidRequest, "Method not allowed"), observability.NewTraceID())
	})
	return e
}

// recoverHTTP turns a panic outside a call into an internal error response.
func (s *Server) recoverHTTP(c *gin.Context) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler { //nolint:errorlint // http.ErrAbortHandler is compared by identity, as net/http does
				panic(p) //nolint:forbidigo // re-raised so net/http aborts the response as the handler asked
			}
			s.log.Error("panic in HTTP handler", "path", c.Request.URL.Path, "panic", p)
			writeHTTPError(c.Writer, http.StatusInternalServerError, gateway.NewError(schemas.CodeInternal), observability.NewTraceID())
		}
	}()
	c.Next()
}

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// handleRPC serves POST /rpc: limits and authentication first, then the body is read,
// transcoded to JSON when it is MessagePack, and decoded; the calls run, and the responses
// are written in one HTTP response in the request's encoding — or as an event stream: a
// single request's named-event result (gateway.Result.Events) always, and its streamed
// result and progress when the caller accepts text/event-stream.
func (s *Server) handleRPC(c *gin.Context) {
	rt := s.acquire()
	defer rt.release()
	w, r := c.Writer, c.Request
	ctx, span, traceID := rt.startIngress(rt.extractHTTP(r), gateway.ProtocolHTTP, spanHTTPIngress)
	if span != nil {
		r = r.WithContext(ctx)
		defer endHTTPSpan(span, w.Status)
	}
	w.Header().Set("X-Trace-Id", traceID)
	ex, ok := admitHTTP(rt, w, r, traceID)
	if !ok {
		return
	}
	ex.span = span
	bufp := bodyPool.Get().(*[]byte)
	defer bodyPool.Put(bufp)
	body, err := readBody(r, rt.cfg.JSONRPC.MaxBodyBytes, (*bufp)[:0])
	*bufp = body[:0]
	if err != nil {
		s.writeBodyErrorIn(w, err, rt.cfg.JSONRPC.MaxBodyBytes, traceID, ex.encoding)
		return
	}
	events := newSSEWriter(r.Context(), w, rt.cfg.SSE, rt.cfg.Server.Boundary.WriteTimeout)
	defer events.close()
	ex.events = events.deliverEvents
	if sse.Accepts(r.Header.Get("Accept")) {
		acceptEvents(ex, events)
	}
	outp := bodyPool.Get().(*[]byte)
	defer bodyPool.Put(outp)
	out := rt.serveEncoded(rateLimitContext(rt, w, r), ex, body, (*outp)[:0])
	*outp = out[:0]
	switch {
	case events.isNamed(): // a stream of named events ends with its last event
	case events.isStarted():
		events.finish(finalResponse(out)) // the final response ends the event stream
	default:
		// 429/503 + Retry-After for a shed call, 403 for 4002/4003 — but for NEKTE methods,
		// whose wire contract wants every JSON-RPC error with 200 (the reference client
		// turns any other status into a transport error and loses the code).
		var rw http.ResponseWriter = w
		if !strings.HasPrefix(ex.method, "nekte.") {
			rw = shedWriter(w, out)
		}
		s.writeJSONRPCIn(rw, out, ex.encoding, traceID)
	}
}

// serveEncoded is serve for a body in the exchange's encoding; the responses it appends to
// dst are JSON (the face encodes them as it writes them).
func (rt *runtime) serveEncoded(ctx context.Context, ex *exchange, body, dst []byte) []byte {
	text, err := ex.encoding.toJSON(body, rt.limitsFor(ex.principal), rt.cfg.JSONRPC.MaxBodyBytes)
	if err != nil {
		traceError(ex.span, err)
		return appendError(dst, jsonrpc.ID{}, err, ex.traceID)
	}
	return rt.serve(ctx, ex, text, dst)
}

// acceptEvents lets a single request's streamed result and progress reports reach a caller
// that accepts text/event-stream as events; the response becomes an event stream with the
// first of them. Batches keep plain responses.
func acceptEvents(ex *exchange, events *sseWriter) {
	ex.stream = events.deliver
	ex.progress = func(id jsonrpc.ID, single bool) (func(gateway.Progress), func()) {
		if !single {
			return nil, nil
		}
		return events.progress(id)
	}
	if md := ex.metadata; md != nil { // headers race with a progress event starting the stream
		ex.metadata = func(m map[string][]string) { events.unlessStarted(func() { md(m) }) }
	}
}

// admitHTTP checks what can be checked before the body is read — media type, credentials,
// the caller's deadline — and answers the request itself, in the request's encoding, when
// one fails.
func admitHTTP(rt *runtime, w http.ResponseWriter, r *http.Request, traceID string) (*exchange, bool) {
	enc, ok := mediaEncoding(r.Header.Get("Content-Type"))
	if !ok {
		writeHTTPError(w, http.StatusUnsupportedMediaType,
			gateway.Errorf(schemas.CodeUnsupportedMedia, "Content-Type must be application/json or application/x-msgpack"), traceID)
		return nil, false
	}
	principal, err := rt.auth.Authenticate(r.Context(), httpCredentials(r, gateway.ZoneExternal))
	if err != nil {
		writeAuthErrorIn(w, gateway.AsError(err), traceID, enc)
		return nil, false
	}
	callerMs, ok := parseDeadlineHeader(r.Header.Get("X-Deadline-Ms"))
	if !ok {
		writeHTTPErrorIn(w, http.StatusBadRequest,
			gateway.Errorf(schemas.CodeInvalidRequest, "X-Deadline-Ms must be a positive integer (epoch milliseconds)"), traceID, enc)
		return nil, false
	}
	now := rt.now()
	deadline := rt.cfg.Deadline.Resolve(now, callerMs)
	// The response may be written until write_timeout after the deadline (or after now, for
	// a deadline already past: its error still has to reach the caller).
	_ = http.NewResponseController(w).SetWriteDeadline(latest(deadline, now).Add(rt.cfg.Server.Boundary.WriteTimeout))
	return &exchange{
		principal: principal, zone: gateway.ZoneExternal, protocol: gateway.ProtocolHTTP, deadline: deadline, traceID: traceID,
		callerDeadline: callerMs > 0, encoding: enc,
		metadata: func(md map[string][]string) {
			for k, vs := range md {
				for _, v := range vs {
					w.Header().Add("Grpc-Metadata-"+k, v)
				}
			}
		},
	}, true
}

// writeJSONRPCIn writes a JSON-RPC response body — out is its JSON — in enc, or 204 when
// there is none (notifications).
func (s *Server) writeJSONRPCIn(w http.ResponseWriter, out []byte, enc wireEncoding, traceID string) {
	if len(out) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	out, ok := enc.fromJSON(out, traceID)
	if !ok {
		s.log.Error("a response has no MessagePack form", "trace_id", traceID)
	}
	w.Header().Set("Content-Type", enc.contentType())
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

var errBodyTooLarge = errors.New("request body too large")

// readBody reads the whole body into buf, failing with errBodyTooLarge past limit bytes.
func readBody(r *http.Request, limit int64, buf []byte) ([]byte, error) {
	if r.ContentLength > limit {
		return buf, errBodyTooLarge
	}
	if r.ContentLength > 0 && int64(cap(buf)) < r.ContentLength {
		buf = make([]byte, 0, r.ContentLength)
	}
	lr := io.LimitReader(r.Body, limit+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return buf[:0], errBodyTooLarge
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf[:0], err
		}
	}
}

func (s *Server) writeBodyError(w http.ResponseWriter, err error, limit int64, traceID string) {
	s.writeBodyErrorIn(w, err, limit, traceID, encodingJSON)
}

// writeBodyErrorIn answers a body that could not be read, in enc.
func (s *Server) writeBodyErrorIn(w http.ResponseWriter, err error, limit int64, traceID string, enc wireEncoding) {
	if errors.Is(err, errBodyTooLarge) {
		writeHTTPErrorIn(w, http.StatusRequestEntityTooLarge, gateway.NewError(schemas.CodePayloadTooLarge).
			With("limit", "max_body_bytes").With("max", limit), traceID, enc)
		return
	}
	s.log.Debug("reading request body", "trace_id", traceID, "err", err)
	writeHTTPErrorIn(w, http.StatusBadRequest, gateway.Errorf(schemas.CodeInvalidRequest, "Could not read the request body"), traceID, enc)
}

// writeHTTPError ends an exchange that failed before any JSON-RPC request was read: the
// body is a JSON-RPC error response with id null.
func writeHTTPError(w http.ResponseWriter, status int, err *gateway.Error, traceID string) {
	writeHTTPErrorIn(w, status, err, traceID, encodingJSON)
}

// writeHTTPErrorIn is writeHTTPError with the body in enc.
func writeHTTPErrorIn(w http.ResponseWriter, status int, err *gateway.Error, traceID string, enc wireEncoding) {
	body, _ := enc.fromJSON(appendError(nil, jsonrpc.ID{}, err, traceID), traceID)
	h := w.Header()
	h.Set("Content-Type", enc.contentType())
	h.Set("X-Trace-Id", traceID)
	w.WriteHeader(status)
	_, _ = w.Write(body) //nolint:gosec // a JSON-RPC error of our own table, served as JSON or MessagePack, never HTML
}

// writeAuthError answers a failed authentication with the table's HTTP status and, for 401,
// the WWW-Authenticate challenge (bearerChallenge).
func writeAuthError(w http.ResponseWriter, err *gateway.Error, traceID string) {
	writeAuthErrorIn(w, err, traceID, encodingJSON)
}

// writeAuthErrorIn is writeAuthError with the body in enc.
func writeAuthErrorIn(w http.ResponseWriter, err *gateway.Error, traceID string, enc wireEncoding) {
	writeChallenge(w, err, traceID, enc, "")
}

// writeChallenge is writeAuthErrorIn whose challenge names resourceMetadata, the URL of the
// OAuth protected-resource metadata (RFC 9728), when it is not empty.
func writeChallenge(w http.ResponseWriter, err *gateway.Error, traceID string, enc wireEncoding, resourceMetadata string) {
	status := schemas.KindOf(err.Code()).HTTP
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", bearerChallenge(err, resourceMetadata))
	}
	writeHTTPErrorIn(w, status, err, traceID, enc)
}

// isJSON reports whether a Content-Type is application/json (parameters allowed, charset
// only utf-8).
func isJSON(ct string) bool {
	if ct == jsonContentType {
		return true
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != jsonContentType {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}

// parseDeadlineHeader parses X-Deadline-Ms; an absent header is 0, ok.
func parseDeadlineHeader(v string) (int64, bool) {
	if v == "" {
		return 0, true
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	return ms, err == nil && ms > 0
}

// httpCredentials extracts the credentials of an HTTP request without reading its body.
func httpCredentials(r *http.Request, zone gateway.TrustZone) gateway.Credentials {
	creds := gateway.Credentials{Zone: zone, APIKey: r.Header.Get("X-API-Key")}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		creds.Bearer = strings.TrimSpace(a[7:])
	} else if a != "" {
		creds.Bearer = a // an unsupported scheme still counts as a presented credential
	}
	creds.Remote, _ = netip.ParseAddrPort(r.RemoteAddr)
	return creds
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
