package httprpc

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/codecs/sse"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// RPCPath is where the boundary serves JSON-RPC over HTTP: the endpoint a NEKTE agent card
// advertises.
const RPCPath = "/rpc"

// spanIngress is the name of an exchange's ingress span until its method is known.
const spanIngress = "http POST " + RPCPath

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// serveRPC serves POST /rpc: limits and authentication first, then the body is read,
// transcoded to JSON when it is MessagePack, and decoded; the calls run, and the responses
// are written in one HTTP response in the request's encoding — or as an event stream: a
// single request's named-event result (gateway.Result.Events) always, and its streamed
// result and progress when the caller accepts text/event-stream, as well as the refusal of
// a nekte.delegate before its stream started (one "error" event).
func (f *Face) serveRPC(c *gin.Context) {
	rt := f.gw.Acquire()
	defer rt.Release()
	p, st := rt.Pipeline(), rt.HTTP()
	w, r := c.Writer, c.Request
	ctx, span, traceID := p.Tracer.StartIngress(p.Tracer.ExtractHTTP(r), gateway.ProtocolHTTP, spanIngress)
	if span != nil {
		r = r.WithContext(ctx)
		defer observability.EndHTTPSpan(span, w.Status)
	}
	x := new(exchange) // the request's exchange, deliveries and trace header, in one allocation
	x.traceHdr[0] = traceID
	w.Header()["X-Trace-Id"] = x.traceHdr[:] // canonical already; net/http copies the header when it writes it
	ex := &x.ex
	enc, ok := admit(rt, st, w, r, traceID, ex)
	if !ok {
		return
	}
	ex.Span = span
	bufp := bodyPool.Get().(*[]byte)
	defer bodyPool.Put(bufp)
	body, err := faces.ReadBody(r, p.MaxBodyBytes, (*bufp)[:0])
	*bufp = body[:0]
	if err != nil {
		faces.WriteBodyError(w, f.log, err, p.MaxBodyBytes, traceID, enc)
		return
	}
	x.events = sseWriter{ctx: r.Context(), w: w, limits: st.SSE, timeout: st.WriteTimeout}
	events := &x.events
	events.watchAs(p.Liveness, ex.Principal)
	defer events.close()
	x.base = delivery{w: w, events: events}
	ex.Delivery = &x.base
	accepts := sse.Accepts(r.Header.Get("Accept"))
	if accepts {
		x.sse = sseDelivery{delivery: &x.base}
		ex.Delivery = &x.sse
	}
	outp := bodyPool.Get().(*[]byte)
	defer bodyPool.Put(outp)
	ctx = r.Context()
	if st.RateLimits || st.Idempotency {
		ctx = rateLimitContext(st, w, r)
	}
	out := p.ServeEncoded(ctx, ex, enc, body, (*outp)[:0])
	*outp = out[:0]
	switch {
	case events.isNamed(): // a stream of named events ends with its last event
	case events.isStarted():
		events.finish(finalResponse(out)) // the final response ends the event stream
	case ex.Method == methodDelegate && accepts:
		// A delegation refused before its stream started: a one-event stream for a caller
		// that reads event streams (refusalstream.go).
		if frame, ok := delegateRefusal(out, body, enc); ok {
			writeRefusalStream(w, frame)
			return
		}
		faces.WriteResponse(w, f.log, out, enc, traceID)
	default:
		// 429/503 + Retry-After for a shed call, 403 for 4002/4003 — but for NEKTE methods,
		// whose wire contract wants every JSON-RPC error with 200 (the reference client
		// turns any other status into a transport error and loses the code).
		var rw http.ResponseWriter = w
		if !strings.HasPrefix(ex.Method, "nekte.") {
			rw = shedWriter(w, out)
		}
		faces.WriteResponse(rw, f.log, out, enc, traceID)
	}
}

// exchange is what one POST /rpc keeps while its calls run: the exchange, the event
// writer of its response, the deliveries the calls reach the caller through and the value
// of its X-Trace-Id header.
type exchange struct {
	ex       faces.Exchange
	events   sseWriter
	base     delivery
	sse      sseDelivery
	traceHdr [1]string
}

// delivery is how the calls of a POST /rpc reach the caller beyond their responses: the
// surfaced backend metadata of a single request as Grpc-Metadata-<key> headers, and a
// stream of named events as the response's event stream.
type delivery struct {
	w      http.ResponseWriter
	events *sseWriter
}

var (
	_ faces.MetadataDeliverer = (*delivery)(nil)
	_ faces.EventDeliverer    = (*delivery)(nil)
)

// Metadata implements faces.MetadataDeliverer.
func (d *delivery) Metadata(md map[string][]string) {
	for k, vs := range md {
		for _, v := range vs {
			d.w.Header().Add("Grpc-Metadata-"+k, v)
		}
	}
}

// DeliverEvents implements faces.EventDeliverer.
func (d *delivery) DeliverEvents(ctx context.Context, id jsonrpc.ID, s gateway.Stream) faces.Outcome {
	return d.events.deliverEvents(ctx, id, s)
}

// sseDelivery lets a single request's streamed result and progress reports reach a caller
// that accepts text/event-stream as events; the response becomes an event stream with the
// first of them. Batches keep plain responses.
type sseDelivery struct {
	*delivery
}

var (
	_ faces.StreamDeliverer   = (*sseDelivery)(nil)
	_ faces.ProgressDeliverer = (*sseDelivery)(nil)
)

// DeliverStream implements faces.StreamDeliverer.
func (d *sseDelivery) DeliverStream(ctx context.Context, id jsonrpc.ID, s gateway.Stream) faces.Outcome {
	return d.events.deliver(ctx, id, s)
}

// Progress implements faces.ProgressDeliverer: only a single request's progress is sent.
func (d *sseDelivery) Progress(id jsonrpc.ID, single bool) (func(gateway.Progress), func()) {
	if !single {
		return nil, nil
	}
	return d.events.progress(id)
}

// Metadata implements faces.MetadataDeliverer: headers race with a progress event starting
// the stream, so they are set only while it has not.
func (d *sseDelivery) Metadata(md map[string][]string) {
	d.events.unlessStarted(func() { d.delivery.Metadata(md) })
}

// admit checks what can be checked before the body is read — media type, credentials,
// the caller's deadline — and answers the request itself, in the request's encoding, when
// one fails.
func admit(rt Runtime, st Settings, w http.ResponseWriter, r *http.Request, traceID string, ex *faces.Exchange) (faces.Encoding, bool) {
	enc, ok := faces.MediaEncoding(r.Header.Get("Content-Type"))
	if !ok {
		faces.WriteHTTPError(w, http.StatusUnsupportedMediaType,
			gateway.Errorf(schemas.CodeUnsupportedMedia, "Content-Type must be application/json or application/x-msgpack"), traceID, faces.EncodingJSON)
		return enc, false
	}
	principal, err := rt.Authenticator().Authenticate(r.Context(), faces.HTTPCredentials(r, gateway.ZoneExternal))
	if err != nil {
		faces.WriteChallenge(w, gateway.AsError(err), traceID, enc, "")
		return enc, false
	}
	callerMs, ok := faces.ParseDeadlineHeader(r.Header.Get("X-Deadline-Ms"))
	if !ok {
		faces.WriteHTTPError(w, http.StatusBadRequest,
			gateway.Errorf(schemas.CodeInvalidRequest, "X-Deadline-Ms must be a positive integer (epoch milliseconds)"), traceID, enc)
		return enc, false
	}
	p := rt.Pipeline()
	now := p.Now()
	deadline := p.Deadline.Resolve(now, callerMs)
	// The response may be written until write_timeout after the deadline (or after now, for
	// a deadline already past: its error still has to reach the caller).
	_ = http.NewResponseController(w).SetWriteDeadline(faces.Latest(deadline, now).Add(st.WriteTimeout))
	*ex = faces.Exchange{
		Principal: principal, Zone: gateway.ZoneExternal, Protocol: gateway.ProtocolHTTP, Deadline: deadline, TraceID: traceID,
		CallerDeadline: callerMs > 0,
	}
	return enc, true
}
