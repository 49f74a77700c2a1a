package a2aface

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// spanIngress names the ingress span of POST /a2a.
const spanIngress = "http POST " + Path

// exchange is one POST /a2a: the configuration it runs on, the request, and how its calls
// enter the pipeline.
type exchange struct {
	f     *Face
	rt    Runtime
	cfg   *Config
	p     *faces.Pipeline
	w     http.ResponseWriter
	r     *http.Request
	req   a2a.Request
	ex    faces.Exchange // the template of every call the request makes
	owner owner
	// out, when set, takes the answer instead of w: the exchange is one operation of
	// another binding (Operate), and w and r are nil.
	out *opOut
}

// Serve serves POST /a2a: authentication before the body is read, then the version, the
// body within a2a.max_message_bytes, the strict decoder, and the operation.
func (f *Face) Serve(w http.ResponseWriter, r *http.Request) {
	rt := f.gw.Acquire()
	defer rt.Release()
	cfg := rt.A2A()
	if cfg == nil {
		faces.WriteHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "A2A is not enabled"), observability.NewTraceID(), faces.EncodingJSON)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		faces.WriteHTTPError(w, http.StatusMethodNotAllowed, gateway.Errorf(schemas.CodeInvalidRequest, "Method not allowed"), observability.NewTraceID(), faces.EncodingJSON)
		return
	}
	p := rt.Pipeline()
	ctx, span, traceID := p.Tracer.StartIngress(p.Tracer.ExtractHTTP(r), gateway.ProtocolHTTP, spanIngress)
	if span != nil {
		r = r.WithContext(ctx)
		defer span.End()
	}
	w.Header().Set("X-Trace-Id", traceID)
	x := &exchange{f: f, rt: rt, cfg: cfg, p: p, w: w, r: r}
	if !x.admit(traceID) {
		return
	}
	x.ex.Span = span
	body, err := faces.ReadBody(r, cfg.MaxMessageBytes, nil)
	if err != nil {
		x.writeError(jsonrpc.ID{}, a2a.Errf(a2a.CodeInvalidRequest, "Request payload validation error").
			At("", "the body is larger than a2a.max_message_bytes ("+strconv.FormatInt(cfg.MaxMessageBytes, 10)+")"))
		return
	}
	v, verr := a2a.ParseVersion(versionOf(r))
	if verr == nil && v == a2a.V03 && !*cfg.ServeV03 {
		verr = a2a.Errf(a2a.CodeVersionNotSupported, "Version not supported").Info("VERSION_NOT_SUPPORTED", "supported", "1.0")
	}
	if verr != nil {
		_, id, _ := a2a.DecodeRequest(body, a2a.V10, x.limits()) // for the id the error answers
		x.writeError(id, verr)
		return
	}
	req, id, derr := a2a.DecodeRequest(body, v, x.limits())
	if derr != nil {
		x.writeError(id, derr)
		return
	}
	x.req = req
	x.ex.Method = req.Method
	x.dispatch(r.Context())
}

// versionOf returns the version the request names: the A2A-Version header, or the
// A2A-Version query parameter.
func versionOf(r *http.Request) string {
	if h := r.Header.Get(a2a.VersionHeader); h != "" {
		return h
	}
	return r.URL.Query().Get(a2a.VersionHeader)
}

func (x *exchange) limits() a2a.Limits {
	return a2a.Limits{MaxBytes: x.cfg.MaxMessageBytes, MaxDepth: x.p.Limits.MaxDepth,
		MaxStringBytes: x.p.Limits.MaxStringBytes, MaxParts: x.cfg.MaxParts}
}

// admit checks what can be checked before the body is read — media type, credentials,
// the caller's deadline — and answers the request itself when one fails.
func (x *exchange) admit(traceID string) bool {
	w, r := x.w, x.r
	if !faces.IsJSON(r.Header.Get("Content-Type")) {
		faces.WriteHTTPError(w, http.StatusUnsupportedMediaType,
			gateway.Errorf(schemas.CodeUnsupportedMedia, "Content-Type must be application/json"), traceID, faces.EncodingJSON)
		return false
	}
	principal, err := x.rt.Authenticator().Authenticate(r.Context(), faces.HTTPCredentials(r, gateway.ZoneExternal))
	if err != nil {
		faces.WriteChallenge(w, gateway.AsError(err), traceID, faces.EncodingJSON, x.rt.Security().ResourceMetadata)
		return false
	}
	callerMs, ok := faces.ParseDeadlineHeader(r.Header.Get("X-Deadline-Ms"))
	if !ok {
		faces.WriteHTTPError(w, http.StatusBadRequest,
			gateway.Errorf(schemas.CodeInvalidRequest, "X-Deadline-Ms must be a positive integer (epoch milliseconds)"), traceID, faces.EncodingJSON)
		return false
	}
	x.ex = faces.Exchange{Principal: principal, Zone: gateway.ZoneExternal, Protocol: gateway.ProtocolHTTP,
		Deadline: x.p.Resolve(callerMs), CallerDeadline: callerMs > 0, TraceID: traceID, KeepStream: true}
	x.owner = ownerOf(principal)
	return true
}

// dispatch runs the request's operation.
func (x *exchange) dispatch(ctx context.Context) {
	switch x.req.Op {
	case a2a.OpSendMessage:
		x.send(ctx)
	case a2a.OpSendStreamingMessage:
		x.sendStreaming(ctx)
	case a2a.OpGetTask:
		x.getTask(ctx)
	case a2a.OpListTasks:
		x.listTasks(ctx)
	case a2a.OpCancelTask:
		x.cancelTask(ctx)
	case a2a.OpSubscribeToTask:
		x.subscribe(ctx)
	case a2a.OpGetExtendedCard:
		x.extendedCard()
	default: // the push-notification config operations
		x.pushConfig(ctx)
	}
}

// call runs method with params through the pipeline as the caller; a streamed result
// comes back unread in the outcome, and the caller closes it.
func (x *exchange) call(ctx context.Context, method string, params []byte) faces.Outcome {
	req, derr := jsonrpc.DecodeCall(method, params, false, x.p.LimitsFor(x.ex.Principal))
	if derr != nil {
		return faces.Outcome{Err: faces.FromDecodeError(derr)}
	}
	ex := x.ex
	ex.Method = method
	return x.p.Call(ctx, &ex, &req, false)
}

// writeResult answers the request with result.
func (x *exchange) writeResult(result []byte) {
	if x.out != nil {
		x.out.result = result
		return
	}
	x.write(a2a.AppendResult(nil, x.req.ID, result))
}

// writeError answers the request id with e.
func (x *exchange) writeError(id jsonrpc.ID, e *a2a.Error) {
	observability.TraceError(x.ex.Span, gateway.Errorf(e.Code, "%s", e.Message))
	if x.out != nil {
		x.out.err = e
		return
	}
	x.write(a2a.AppendError(nil, id, e, x.ex.TraceID))
}

func (x *exchange) write(body []byte) {
	_ = http.NewResponseController(x.w).SetWriteDeadline(x.f.now().Add(x.cfg.SSEWriteTimeout))
	h := x.w.Header()
	h.Set("Content-Type", faces.JSONContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(body) //nolint:gosec,nolintlint // a JSON-RPC response encoded here, served as application/json with nosniff (the taint analysis flags it on some runs only)
}
