package faces

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
)

// Caller is who a call made on a caller's behalf runs as: a caller a face authenticated
// by its own means (the MCP face, the internal gRPC services), or the caller of the call
// a NEKTE capability runs within.
type Caller struct {
	Principal gateway.Principal
	Zone      gateway.TrustZone
	Protocol  gateway.Protocol
	// TraceID is the trace the call is recorded under; empty starts a new trace.
	TraceID string
	// Capability is the NEKTE capability the call runs (gateway.Call.Capability), empty for
	// a method called directly. Its params are the capability's input, which the call gets
	// as it is: the reserved members (deadline_ms, depends_on) belong to JSON-RPC requests,
	// not to a capability's input. Its streamed result is handed back unread.
	Capability string
}

// Invoked is the outcome of a call made on a caller's behalf (RunAs): exactly one of Res
// and Err is set.
type Invoked struct {
	// Res is the call's result; Result is its value. A capability call's streamed result
	// is in Res.Stream, unread; any other call's stream has been delivered through send
	// (Streamed is then true) or collected into Result.
	Res      *gateway.Result
	Result   []byte
	Streamed bool
	Err      *gateway.Error
	TraceID  string
}

// RunAs runs one method as who, its method and params checked as strictly as a JSON-RPC
// request at the boundary (jsonrpc.DecodeCall: no envelope is written to be decoded again). The deadline is ctx's (resolved against the deadline section: the
// default when ctx has none, at most max); cancelling ctx cancels the call; a progress sink
// in ctx receives its progress; send, when not nil, receives each message of a streamed
// result.
func (p *Pipeline) RunAs(ctx context.Context, who Caller, method string, params []byte, send func([]byte) error) Invoked {
	ctx, span, traceID := p.Tracer.StartAsCaller(ctx, who.Protocol, who.TraceID, method)
	if span != nil {
		defer span.End()
	}
	req, derr := jsonrpc.DecodeCall(method, params, who.Capability != "", p.LimitsFor(who.Principal))
	if derr != nil {
		err := FromDecodeError(derr)
		observability.TraceError(span, err)
		return Invoked{Err: err, TraceID: traceID}
	}
	var callerMs int64
	if dl, ok := ctx.Deadline(); ok {
		callerMs = dl.UnixMilli()
	}
	ex := Exchange{Principal: who.Principal, Zone: who.Zone, Protocol: who.Protocol,
		Deadline: p.Resolve(callerMs), CallerDeadline: callerMs > 0, TraceID: traceID, Span: span,
		Capability: who.Capability, KeepStream: who.Capability != ""}
	var sd *sendDelivery
	if send != nil {
		sd = &sendDelivery{send: send}
		ex.Delivery = sd
	}
	out := p.Call(ctx, &ex, &req, true)
	if out.Err != nil {
		return Invoked{Err: out.Err, TraceID: traceID}
	}
	return Invoked{Res: out.Res, Result: out.Res.Value, Streamed: sd != nil && sd.streamed, TraceID: traceID}
}

// sendDelivery delivers a streamed result's messages through send, as they are.
type sendDelivery struct {
	send     func([]byte) error
	streamed bool
}

var _ StreamDeliverer = (*sendDelivery)(nil)

// DeliverStream implements StreamDeliverer.
func (d *sendDelivery) DeliverStream(ctx context.Context, id jsonrpc.ID, s gateway.Stream) Outcome {
	d.streamed = true
	return RelayMessages(ctx, id, s, d.send)
}
