package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// exchange is what a face knows about one body before decoding it.
type exchange struct {
	principal gateway.Principal
	zone      gateway.TrustZone
	protocol  gateway.Protocol
	// deadline is the absolute deadline of the whole body (one request or a batch).
	deadline time.Time
	// callerDeadline says the caller named deadline (X-Deadline-Ms, a gRPC deadline) rather
	// than getting deadline.default; a request's params.deadline_ms names its own.
	callerDeadline bool
	traceID        string
	// span is the exchange's ingress span (tracing.go), nil when tracing is off; traceID is
	// its trace id.
	span trace.Span
	// method is the method of a body holding a single request, set when it is decoded; ""
	// for a batch.
	method string
	// encoding is how the face carries this body and what goes back for it; the exchange
	// itself only ever sees JSON.
	encoding wireEncoding
	// stream, when set, delivers the streamed result of a single request (not a batch
	// member) to the caller as it comes and returns the final outcome; otherwise the
	// messages are collected into an array result.
	stream func(ctx context.Context, id jsonrpc.ID, s gateway.Stream) outcome
	// events, when set, delivers a single request's stream of named events
	// (gateway.Result.Events) as stream does; when it is not, such a stream is delivered
	// by stream, or collected.
	events func(ctx context.Context, id jsonrpc.ID, s gateway.Stream) outcome
	// keepStream hands a streamed result back unread in the outcome (the capability
	// Invoker's caller reads and closes it) instead of delivering or collecting it.
	keepStream bool
	// capability is the NEKTE capability the body's call runs (gateway.Call.Capability),
	// empty for methods called directly.
	capability string
	// metadata, when set, receives the surfaced backend metadata of a single request's
	// successful result (the HTTP face turns it into response headers).
	metadata func(md map[string][]string)
	// begin, when set, is called for each request with an id before it runs: it may give
	// the call its own context (cancellable by the caller) and an input stream; end is
	// called when the request is answered.
	begin func(ctx context.Context, id jsonrpc.ID) (callCtx context.Context, input gateway.Stream, end func())
	// progress, when set, is asked for a sink for the progress reports of each request
	// with an id (single says it is not a batch member); a nil sink means the face cannot
	// deliver progress for that request. stop is called before the request's response is
	// written; the sink drops reports from then on.
	progress func(id jsonrpc.ID, single bool) (sink func(gateway.Progress), stop func())
}

// outcome is the result of one request: exactly one of res and err is set, unless the
// request was a notification (silent).
type outcome struct {
	res    *gateway.Result
	err    *gateway.Error
	id     jsonrpc.ID
	silent bool
}

// serve decodes body, runs every request in it and appends the response body to dst. It
// returns dst unchanged when nothing is to be sent back (only notifications).
func (rt *runtime) serve(ctx context.Context, ex *exchange, body, dst []byte) []byte {
	payload, derr := jsonrpc.Decode(body, rt.limitsFor(ex.principal))
	return rt.servePayload(ctx, ex, payload, derr, dst)
}

// servePayload is serve for a body already decoded.
func (rt *runtime) servePayload(ctx context.Context, ex *exchange, payload jsonrpc.Payload, derr *jsonrpc.DecodeError, dst []byte) []byte {
	if derr != nil {
		err := fromDecodeError(derr)
		traceError(ex.span, err)
		return appendError(dst, derr.ID, err, ex.traceID)
	}
	if !payload.Batch {
		if payload.Members[0].Err == nil {
			ex.method = payload.Members[0].Request.Method
		}
		out := rt.runMember(ctx, ex, &payload.Members[0])
		if payload.Members[0].Err != nil {
			traceError(ex.span, out.err)
		}
		return appendOutcome(dst, &out, ex.traceID)
	}
	traceBatch(ex.span, len(payload.Members))
	return appendBatch(dst, rt.runBatch(ctx, ex, payload.Members), ex.traceID)
}

// limitsFor returns the decoder limits for a caller: the batch size depends on its tier.
func (rt *runtime) limitsFor(p gateway.Principal) jsonrpc.Limits {
	lim := rt.limits
	lim.MaxBatch = rt.maxBatch(p.Tier)
	return lim
}

// reject answers every request of a decoded body with err without running any
// (notifications stay silent; malformed members get their decode error).
func reject(payload jsonrpc.Payload, derr *jsonrpc.DecodeError, dst []byte, err *gateway.Error, traceID string) []byte {
	if derr != nil {
		return appendError(dst, derr.ID, fromDecodeError(derr), traceID)
	}
	outs := make([]outcome, len(payload.Members))
	for i := range payload.Members {
		m := &payload.Members[i]
		if m.Err != nil {
			outs[i] = outcome{err: fromDecodeError(m.Err), id: m.Err.ID}
		} else {
			outs[i] = outcome{err: err, id: m.Request.ID, silent: m.Request.IsNotification()}
		}
	}
	if !payload.Batch {
		return appendOutcome(dst, &outs[0], traceID)
	}
	return appendBatch(dst, outs, traceID)
}

// appendBatch appends the array of responses for outs, in order, or nothing when every
// member was a notification.
func appendBatch(dst []byte, outs []outcome, traceID string) []byte {
	start, n := len(dst), 0
	dst = append(dst, '[')
	for i := range outs {
		if outs[i].silent {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = appendOutcome(dst, &outs[i], traceID)
		n++
	}
	if n == 0 {
		return dst[:start]
	}
	return append(dst, ']')
}

// runMember runs one member of a payload on its own.
func (rt *runtime) runMember(ctx context.Context, ex *exchange, m *jsonrpc.Member) outcome {
	if m.Err != nil {
		return outcome{err: fromDecodeError(m.Err), id: m.Err.ID}
	}
	return rt.call(ctx, ex, &m.Request, true)
}

// call runs one well-formed request through the pipeline; single says it is not a batch
// member (only then may its streamed result be delivered incrementally).
func (rt *runtime) call(ctx context.Context, ex *exchange, req *jsonrpc.Request, single bool) (out outcome) {
	out.id, out.silent = req.ID, req.IsNotification()
	var input gateway.Stream
	if ex.begin != nil && !out.silent {
		var end func()
		ctx, input, end = ex.begin(ctx, req.ID)
		defer end()
	}
	if ex.progress != nil && !out.silent {
		if sink, stop := ex.progress(req.ID, single); sink != nil {
			ctx = gateway.WithProgress(ctx, sink)
			defer stop()
		}
	}
	c := &gateway.Call{
		Method:     req.Method,
		Params:     req.Params,
		ID:         req.ID,
		Principal:  ex.principal,
		Deadline:   resilience.Narrow(ex.deadline, req.DeadlineMs),
		TraceID:    ex.traceID,
		Zone:       ex.zone,
		Protocol:   ex.protocol,
		Input:      input,
		Capability: ex.capability,
	}
	if ex.callerDeadline || req.DeadlineMs > 0 {
		ctx = gateway.WithCallerDeadline(ctx, c.Deadline)
	}
	if ex.span != nil { // the call's span: the ingress span, or a batch member's own
		var t callTrace
		ctx, t = rt.traceCall(ctx, ex, c, single)
		defer t.record(c, &out)
	}
	ctx = observability.WithLogIDs(ctx, observability.LogIDs{TraceID: c.TraceID})
	if rt.access != nil {
		defer rt.logAccess(ctx, c, &out, time.Now())
	}
	defer func() {
		if p := recover(); p != nil {
			rt.log.ErrorContext(ctx, "panic in call", "method", req.Method, "trace_id", ex.traceID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			out.res, out.err = nil, gateway.NewError(schemas.CodeInternal)
		}
	}()
	res, err := rt.handler(withCall(ctx, c), c)
	if err != nil {
		out.err = gateway.AsError(err)
		rt.logCallError(ctx, c, out.err)
		return out
	}
	if res.Stream != nil && !ex.keepStream {
		return rt.streamed(ctx, ex, c, res, out, single)
	}
	if single && ex.metadata != nil && len(res.Metadata) > 0 {
		ex.metadata(res.Metadata)
	}
	out.res = res
	return out
}

// streamed turns a streamed result into the call's outcome: delivered by the face as it
// comes, or collected into an array (batch members, faces without streaming, HTTP callers
// that do not accept text/event-stream). A stream of named events (gateway.Result.Events)
// goes to the face's events delivery when it has one. Collecting is bounded by
// jsonrpc.max_collected_bytes and by the call's deadline: the collected array is written
// in the response, which has to go out by then.
func (rt *runtime) streamed(ctx context.Context, ex *exchange, c *gateway.Call, res *gateway.Result, out outcome, single bool) outcome {
	s := res.Stream
	defer func() { _ = s.Close() }()
	if out.silent {
		return out
	}
	deliver := ex.stream
	if res.Events && ex.events != nil {
		deliver = ex.events
	}
	if single && deliver != nil {
		o := deliver(ctx, out.id, s)
		o.id = out.id
		if o.err != nil {
			rt.logCallError(ctx, c, o.err)
		}
		return o
	}
	if !c.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, c.Deadline)
		defer cancel()
	}
	o := rt.collect(ctx, s, out)
	if o.err != nil {
		rt.logCallError(ctx, c, o.err)
	}
	return o
}

// collect reads every message of s into an array result, bounded by
// jsonrpc.max_collected_bytes.
func (rt *runtime) collect(ctx context.Context, s gateway.Stream, out outcome) outcome {
	limit := rt.cfg.JSONRPC.MaxCollectedBytes
	arr := []byte{'['}
	for n := 0; ; n++ {
		msg, err := s.Recv(ctx)
		if errors.Is(err, io.EOF) {
			out.res = gateway.NewResult(append(arr, ']'))
			return out
		}
		if err != nil {
			out.err = gateway.AsError(err)
			return out
		}
		if n > 0 {
			arr = append(arr, ',')
		}
		if arr = append(arr, msg...); int64(len(arr)) >= limit {
			out.err = gateway.NewError(schemas.CodePayloadTooLarge).With("limit", "max_collected_bytes").With("max", limit).
				With("recovery_hint", "STREAM_OVER_WEBSOCKET_OR_SSE")
			return out
		}
	}
}

func (rt *runtime) logCallError(ctx context.Context, c *gateway.Call, err *gateway.Error) {
	if err.Code() == schemas.CodeInternal {
		rt.log.ErrorContext(ctx, "call failed", "method", c.Method, "trace_id", c.TraceID, "err", err)
		return
	}
	rt.log.DebugContext(ctx, "call failed", "method", c.Method, "trace_id", c.TraceID, "err", err)
}

// logAccess records the call in the access log (observability.AccessLog): its outcome,
// how long it took since start, and — with log.debug_payloads — its redacted payloads.
// A streamed result's payload is not read for the log.
func (rt *runtime) logAccess(ctx context.Context, c *gateway.Call, out *outcome, start time.Time) {
	e := observability.AccessEntry{
		Method:   c.Method,
		Protocol: c.Protocol.String(),
		Duration: time.Since(start),
		Caller:   c.Principal.Subject,
		TraceID:  c.TraceID,
		Params:   c.Params,
	}
	if out.err != nil {
		e.Code = int(out.err.Code())
	} else if out.res != nil && out.res.Stream == nil {
		e.Result = out.res.Value
	}
	rt.access.Record(ctx, &e)
}

// appendOutcome appends the response for out, or nothing for a notification.
func appendOutcome(dst []byte, out *outcome, traceID string) []byte {
	switch {
	case out.silent:
		return dst
	case out.err != nil:
		return appendError(dst, out.id, out.err, traceID)
	default:
		return jsonrpc.AppendResult(dst, out.id, out.res.Value)
	}
}

// appendError appends an error response whose data carries trace_id beside the error's own
// client-safe data.
func appendError(dst []byte, id jsonrpc.ID, err *gateway.Error, traceID string) []byte {
	data := make(map[string]any, len(err.Data())+1)
	maps.Copy(data, err.Data())
	data["trace_id"] = traceID
	raw, mErr := json.Marshal(data)
	if mErr != nil {
		raw = jsonrpc.AppendString([]byte(`{"trace_id":`), traceID)
		raw = append(raw, '}')
	}
	return jsonrpc.AppendError(dst, id, err.Code(), err.Message(), raw)
}

// fromDecodeError turns a decoder error into the gateway's error type.
func fromDecodeError(d *jsonrpc.DecodeError) *gateway.Error {
	e := gateway.NewError(d.Code).With("reason", d.Reason)
	if d.Limit != "" {
		e = e.With("limit", d.Limit).With("max", d.Max)
	}
	return e
}
