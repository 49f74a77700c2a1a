package faces

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Serve decodes body, runs every request in it and appends the response body to dst. It
// returns dst unchanged when nothing is to be sent back (only notifications).
func (p *Pipeline) Serve(ctx context.Context, ex *Exchange, body, dst []byte) []byte {
	payload, derr := jsonrpc.Decode(body, p.LimitsFor(ex.Principal))
	return p.ServePayload(ctx, ex, payload, derr, dst)
}

// ServeEncoded is Serve for a body in enc; the responses it appends to dst are JSON (the
// face encodes them as it writes them).
func (p *Pipeline) ServeEncoded(ctx context.Context, ex *Exchange, enc Encoding, body, dst []byte) []byte {
	text, err := enc.ToJSON(body, p.LimitsFor(ex.Principal), p.MaxBodyBytes)
	if err != nil {
		observability.TraceError(ex.Span, err)
		return AppendError(dst, jsonrpc.ID{}, err, ex.TraceID)
	}
	return p.Serve(ctx, ex, text, dst)
}

// ServePayload is Serve for a body already decoded.
func (p *Pipeline) ServePayload(ctx context.Context, ex *Exchange, payload jsonrpc.Payload, derr *jsonrpc.DecodeError, dst []byte) []byte {
	if derr != nil {
		err := FromDecodeError(derr)
		observability.TraceError(ex.Span, err)
		return AppendError(dst, derr.ID, err, ex.TraceID)
	}
	if !payload.Batch {
		m := &payload.Members[0]
		if m.Err != nil {
			out := Outcome{Err: FromDecodeError(m.Err), ID: m.Err.ID}
			observability.TraceError(ex.Span, out.Err)
			return AppendOutcome(dst, &out, ex.TraceID)
		}
		ex.Method = m.Request.Method
		out := p.Call(ctx, ex, &m.Request, true)
		return AppendOutcome(dst, &out, ex.TraceID)
	}
	observability.TraceBatch(ex.Span, len(payload.Members))
	return AppendBatch(dst, p.runBatch(ctx, ex, payload.Members), ex.TraceID)
}

// Call runs one well-formed request through the pipeline; single says it is not a batch
// member (only then may its streamed result be delivered incrementally).
func (p *Pipeline) Call(ctx context.Context, ex *Exchange, req *jsonrpc.Request, single bool) Outcome {
	return p.call(ctx, ex, req, single, new(gateway.Call))
}

// call is Call in c (a batch allocates its members' calls at once). The call runs under
// one context of its own (gateway.WithCall), which carries c and answers the values the
// stages set on it — the exchange's log ids (its trace id) among them.
func (p *Pipeline) call(ctx context.Context, ex *Exchange, req *jsonrpc.Request, single bool, c *gateway.Call) (out Outcome) {
	out.ID, out.Silent = req.ID, req.IsNotification()
	*c = gateway.Call{
		Method:     req.Method,
		Params:     req.Params,
		ID:         req.ID,
		Principal:  ex.Principal,
		Deadline:   resilience.Narrow(ex.Deadline, req.DeadlineMs),
		TraceID:    ex.TraceID,
		Zone:       ex.Zone,
		Protocol:   ex.Protocol,
		Capability: ex.Capability,
	}
	if d, ok := ex.Delivery.(InputDeliverer); ok && !out.Silent {
		var end func()
		ctx, c.Input, end = d.Begin(ctx, req.ID) // the call's context may be the face's own
		defer end()
	}
	ctx = gateway.WithCall(ctx, c)
	if d, ok := ex.Delivery.(ProgressDeliverer); ok && !out.Silent {
		if sink, stop := d.Progress(req.ID, single); sink != nil {
			ctx = gateway.WithProgress(ctx, sink)
			defer stop()
		}
	}
	if ex.CallerDeadline || req.DeadlineMs > 0 {
		ctx = gateway.MarkCallerDeadline(ctx, c)
	}
	if ex.Span != nil { // the call's span: the ingress span, or a batch member's own
		var t observability.CallSpan
		ctx, t = p.Tracer.TraceCall(ctx, ex.Span, c, single)
		defer func() { t.Record(c, out.Err) }()
	}
	if p.Access != nil {
		defer p.logAccess(ctx, c, &out, time.Now())
	}
	defer func() {
		if r := recover(); r != nil {
			p.Log.ErrorContext(ctx, "panic in call", "method", req.Method, "trace_id", ex.TraceID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			out.Res, out.Err = nil, gateway.NewError(schemas.CodeInternal)
		}
	}()
	res, err := p.Handler(ctx, c)
	if err != nil {
		out.Err = gateway.AsError(err)
		if gateway.CutOffByShutdown(ctx) { // the grace is ending: say so, not "cancelled"
			out.Err = gateway.ShutdownError()
		}
		p.logCallError(ctx, c, out.Err)
		return out
	}
	if res.Stream != nil && !ex.KeepStream {
		return p.streamed(ctx, ex, c, res, out, single)
	}
	if d, ok := ex.Delivery.(MetadataDeliverer); ok && single && len(res.Metadata) > 0 {
		d.Metadata(res.Metadata)
	}
	out.Res = res
	return out
}

// streamed turns a streamed result into the call's outcome: delivered by the face as it
// comes, or collected into an array (batch members, faces without streaming, HTTP callers
// that do not accept text/event-stream). A stream of named events (gateway.Result.Events)
// goes to the face's EventDeliverer when it has one. Collecting is bounded by
// jsonrpc.max_collected_bytes and by the call's deadline: the collected array is written
// in the response, which has to go out by then.
func (p *Pipeline) streamed(ctx context.Context, ex *Exchange, c *gateway.Call, res *gateway.Result, out Outcome, single bool) Outcome {
	s := res.Stream
	defer func() { _ = s.Close() }()
	if out.Silent {
		return out
	}
	var deliver func(context.Context, jsonrpc.ID, gateway.Stream) Outcome
	if d, ok := ex.Delivery.(StreamDeliverer); ok {
		deliver = d.DeliverStream
	}
	if d, ok := ex.Delivery.(EventDeliverer); ok && res.Events {
		deliver = d.DeliverEvents
	}
	if single && deliver != nil {
		o := deliver(ctx, out.ID, s)
		o.ID = out.ID
		if o.Err != nil {
			p.logCallError(ctx, c, o.Err)
		}
		return o
	}
	if !c.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, c.Deadline)
		defer cancel()
	}
	o := p.collect(ctx, s, out)
	if o.Err != nil {
		p.logCallError(ctx, c, o.Err)
	}
	return o
}

// collect reads every message of s into an array result, bounded by
// jsonrpc.max_collected_bytes.
func (p *Pipeline) collect(ctx context.Context, s gateway.Stream, out Outcome) Outcome {
	limit := p.MaxCollectedBytes
	arr := []byte{'['}
	for n := 0; ; n++ {
		msg, err := s.Recv(ctx)
		if errors.Is(err, io.EOF) {
			out.Res = gateway.NewResult(append(arr, ']'))
			return out
		}
		if err != nil {
			out.Err = gateway.AsError(err)
			return out
		}
		if n > 0 {
			arr = append(arr, ',')
		}
		if arr = append(arr, msg...); int64(len(arr)) >= limit {
			out.Err = gateway.NewError(schemas.CodePayloadTooLarge).With("limit", "max_collected_bytes").With("max", limit).
				With("recovery_hint", "STREAM_OVER_WEBSOCKET_OR_SSE")
			return out
		}
	}
}

func (p *Pipeline) logCallError(ctx context.Context, c *gateway.Call, err *gateway.Error) {
	if err.Code() == schemas.CodeInternal {
		p.Log.ErrorContext(ctx, "call failed", "method", c.Method, "trace_id", c.TraceID, "err", err)
		return
	}
	p.Log.DebugContext(ctx, "call failed", "method", c.Method, "trace_id", c.TraceID, "err", err)
}

// logAccess records the call in the access log (observability.AccessLog): its outcome,
// how long it took since start, and — with log.debug_payloads — its redacted payloads.
// A streamed result's payload is not read for the log.
func (p *Pipeline) logAccess(ctx context.Context, c *gateway.Call, out *Outcome, start time.Time) {
	e := observability.AccessEntry{
		Method:   c.Method,
		Protocol: c.Protocol.String(),
		Duration: time.Since(start),
		Caller:   c.Principal.Subject,
		TraceID:  c.TraceID,
		Params:   c.Params,
		ServedBy: c.ServedBy,
	}
	if out.Err != nil {
		e.Code = int(out.Err.Code())
	} else if out.Res != nil && out.Res.Stream == nil {
		e.Result = out.Res.Value
	}
	p.Access.Record(ctx, &e)
}
