package grpcbackend

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/gatehouse-dev/gatehouse/codecs/transcode"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Invoke implements gateway.Target: params are transcoded to the request message, the RPC
// runs with the call's deadline less the reserve, and the response is transcoded back.
// A traced call's RPC is a client span (trace.go).
func (b *Backend) Invoke(ctx context.Context, call *gateway.Call) (_ *gateway.Result, err error) {
	r := b.state.Load()
	if r == nil {
		return nil, b.unavailable()
	}
	m := r.lookup(call.Method)
	if m == nil {
		return nil, gateway.NewError(schemas.CodeMethodNotFound)
	}
	if err := b.checkDeprecation(m); err != nil {
		return nil, err
	}
	if m.desc.IsStreamingClient() || m.desc.IsStreamingServer() {
		return b.invokeStreaming(ctx, call, m)
	}
	obs := gateway.ObserverFrom(ctx)
	bufp := framePool.Get().(*[]byte)
	defer framePool.Put(bufp)
	req, err := m.encode(obs, (*bufp)[:0], call.Params)
	*bufp = req[:0]
	if err != nil {
		return nil, paramsError(err)
	}
	ctx, span := b.startSpan(ctx, m)
	defer endSpan(span, &err)
	ctx, cancel, herr := b.callContext(ctx, call)
	if herr != nil {
		return nil, herr
	}
	defer cancel()
	var resp frame
	var header, trailer metadata.MD
	var sentTo peer.Peer
	err = b.conn.Invoke(ctx, m.path, &frame{data: req}, &resp,
		grpc.ForceCodecV2(rawCodec{}), grpc.Header(&header), grpc.Trailer(&trailer), grpc.Peer(&sentTo))
	if err != nil {
		return nil, b.statusError(err, header, trailer, sentTo.Addr != nil)
	}
	out, err := m.decode(obs, resp.data)
	if err != nil {
		return nil, gateway.Errorf(schemas.CodeInternal, "The backend's response could not be transcoded").
			With("backend", b.cfg.Name).Wrap(err)
	}
	return &gateway.Result{Value: out, Metadata: b.surfaced(header, trailer)}, nil
}

// callContext bounds the RPC by the call's deadline less the reserve and carries the
// call's identity and the hop's credential in metadata. The metadata is built afresh: no
// metadata the caller sent, and no outgoing metadata already in ctx, reaches the backend.
// A hop left with less than ε once the reserve is taken is refused (DEADLINE_EXCEEDED,
// layer backend) before anything is dialled or sent.
func (b *Backend) callContext(ctx context.Context, call *gateway.Call) (context.Context, context.CancelFunc, *gateway.Error) {
	dl, bounded := ctx.Deadline()
	var hop time.Time
	if bounded {
		var err *gateway.Error
		if hop, err = b.budget(ctx).Deadline(time.Now(), dl, gateway.LayerBackend); err != nil {
			return nil, nil, err.With("backend", b.cfg.Name)
		}
	}
	md := metadata.Pairs("x-request-id", call.TraceID)
	if !injectTrace(ctx, md) && len(call.TraceID) == 32 { // untraced: the call's trace id, a new span id
		md.Append("traceparent", traceparent(call.TraceID))
	}
	if !call.ID.IsZero() {
		md.Append("x-jsonrpc-id", call.ID.Raw())
	}
	b.appendHopCredential(ctx, md)
	ctx = metadata.NewOutgoingContext(ctx, md)
	if bounded {
		ctx, cancel := context.WithDeadline(ctx, hop)
		return ctx, cancel, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	return ctx, cancel, nil
}

// budget is the call's hop budget with this backend's own deadline_reserve, when it has
// one, in place of deadline.reserve.
func (b *Backend) budget(ctx context.Context) gateway.HopBudget {
	budget := gateway.HopBudgetFrom(ctx)
	if b.cfg.DeadlineReserve > 0 {
		budget.Reserve = b.cfg.DeadlineReserve
	}
	return budget
}

// traceparent is the W3C trace context of this hop: the call's trace id with a new span id.
func traceparent(traceID string) string {
	var span [8]byte
	binary.BigEndian.PutUint64(span[:], rand.Uint64()|1) //nolint:gosec // span ids must be unique, not secret
	return "00-" + traceID + "-" + hex.EncodeToString(span[:]) + "-01"
}

func (b *Backend) unavailable() *gateway.Error {
	reason := "descriptors not loaded"
	if e := b.err.Load(); e != nil {
		reason = "descriptors not loaded: " + (*e).Error()
	}
	return gateway.NewError(schemas.CodeUnavailable).With("backend", b.cfg.Name).
		With("retry_after_ms", 1000).Wrap(errors.New(reason))
}

func (b *Backend) checkDeprecation(m *method) error {
	d := m.deprecated
	if d == nil || b.now().Before(d.sunset) {
		return nil
	}
	return gateway.NewError(schemas.CodeDeprecatedVersion).With("sunset", d.cfg.Sunset).With("migration_hint", d.cfg.Hint)
}

// paramsError reports params the request message cannot take, naming the path.
func paramsError(err error) *gateway.Error {
	if pe, ok := errors.AsType[*transcode.PathError](err); ok {
		e := gateway.NewError(schemas.CodeInvalidParams).With("reason", pe.Reason)
		if pe.Path != "" {
			e = e.With("path", "params."+pe.Path)
		}
		return e
	}
	return gateway.NewError(schemas.CodeInvalidParams).With("reason", "params do not fit the method's request message").Wrap(err)
}
