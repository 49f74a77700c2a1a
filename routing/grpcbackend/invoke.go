package grpcbackend

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/gatehouse-dev/gatehouse/codecs/transcode"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// unary is what one unary RPC needs besides its context: the request and response frames,
// the header, trailer and peer grpc-go reports, the call options pointing at them, the
// request's wire bytes and its outgoing metadata. Kept in a pool: the options take their
// fields' addresses, which would otherwise move each of them to the heap on every call.
// grpc-go reads the outgoing metadata while it opens the stream (its header fields are
// copies), so the map is free again once the RPC returned.
type unary struct {
	req, resp       frame
	header, trailer metadata.MD
	sentTo          peer.Peer
	opts            [4]grpc.CallOption
	buf             []byte
	md              metadata.MD
	vals            [4]string
}

// maxPooledFrame bounds the request buffer a pooled unary keeps: a large request's buffer
// is left to the GC rather than held by the pool.
const maxPooledFrame = 64 << 10

// forceRaw is the call option of every unary RPC, made once (it holds an interface).
var forceRaw = grpc.ForceCodecV2(rawCodec{})

var unaryPool = sync.Pool{New: func() any {
	u := &unary{buf: make([]byte, 0, 512), md: make(metadata.MD, 4)}
	u.opts = [4]grpc.CallOption{forceRaw, grpc.Header(&u.header), grpc.Trailer(&u.trailer), grpc.Peer(&u.sentTo)}
	return u
}}

// release returns u to the pool, dropping what the RPC left in it.
func (u *unary) release() {
	u.req, u.resp, u.header, u.trailer, u.sentTo = frame{}, frame{}, nil, nil, peer.Peer{}
	clear(u.md)
	u.vals = [4]string{}
	if cap(u.buf) > maxPooledFrame {
		u.buf = make([]byte, 0, 512)
	}
	unaryPool.Put(u)
}

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
	u := unaryPool.Get().(*unary)
	defer u.release()
	req, err := m.encode(obs, u.buf[:0], call.Params)
	u.buf = req[:0]
	if err != nil {
		return nil, paramsError(err)
	}
	ctx, span := b.startSpan(ctx, m)
	defer endSpan(span, &err)
	ctx, cancel, herr := b.callContext(ctx, call, u)
	if herr != nil {
		return nil, herr
	}
	defer cancel()
	u.req.data = req
	err = b.conn.Invoke(ctx, m.path, &u.req, &u.resp, u.opts[:]...)
	if err != nil {
		return nil, b.statusError(err, u.header, u.trailer, u.sentTo.Addr != nil)
	}
	out, err := m.decode(obs, u.resp.data)
	if err != nil {
		return nil, gateway.Errorf(schemas.CodeInternal, "The backend's response could not be transcoded").
			With("backend", b.cfg.Name).Wrap(err)
	}
	return &gateway.Result{Value: out, Metadata: b.surfaced(u.header, u.trailer)}, nil
}

// callContext bounds the RPC by the call's deadline less the reserve and carries the
// call's identity and the hop's credential in metadata. The metadata is built afresh: no
// metadata the caller sent, and no outgoing metadata already in ctx, reaches the backend.
// A hop left with less than ε once the reserve is taken is refused (DEADLINE_EXCEEDED,
// layer backend) before anything is dialled or sent. A unary RPC (u, nil for a stream),
// which ends before the call's context does, is bounded by gateway.WithHopDeadline —
// without a second timer when the call's own context has not started one — and its
// metadata is u's.
func (b *Backend) callContext(ctx context.Context, call *gateway.Call, u *unary) (context.Context, context.CancelFunc, *gateway.Error) {
	dl, bounded := ctx.Deadline()
	var hop time.Time
	if bounded {
		var err *gateway.Error
		if hop, err = b.budget(ctx).Deadline(time.Now(), dl, gateway.LayerBackend); err != nil {
			return nil, nil, err.With("backend", b.cfg.Name)
		}
	}
	var md metadata.MD
	if u != nil {
		md = b.callMetadata(ctx, call, u.md, u.vals[:0])
	} else {
		md = b.callMetadata(ctx, call, make(metadata.MD, 4), make([]string, 0, 4))
	}
	var cancel context.CancelFunc
	switch {
	case bounded && u != nil:
		ctx, cancel = gateway.WithHopDeadline(ctx, hop)
	case bounded:
		ctx, cancel = context.WithDeadline(ctx, hop)
	default:
		ctx, cancel = context.WithCancel(ctx)
	}
	return metadata.NewOutgoingContext(ctx, md), cancel, nil
}

// callMetadata is the outgoing metadata of call, in md (empty): x-request-id, the trace
// context, the JSON-RPC id and the hop credential. Its values share vals' backing array.
func (b *Backend) callMetadata(ctx context.Context, call *gateway.Call, md metadata.MD, vals []string) metadata.MD {
	add := func(k, v string) {
		vals = append(vals, v)
		md[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	add("x-request-id", call.TraceID)
	if !injectTrace(ctx, md) && len(call.TraceID) == 32 { // untraced: the call's trace id, a new span id
		add("traceparent", traceparent(call.TraceID))
	}
	if !call.ID.IsZero() {
		add("x-jsonrpc-id", asciiID(call.ID.Raw()))
	}
	if tok := b.hopCredential(ctx); tok != "" {
		add("authorization", "Bearer "+tok)
	}
	return md
}

// asciiID is the JSON text of an id as metadata may carry it: printable ASCII only (gRPC
// refuses any other byte in a metadata value, failing the whole call). Characters outside
// it are written as \u escapes, which denote the same JSON string; a byte that is not
// UTF-8 becomes \ufffd.
func asciiID(raw string) string {
	i := 0
	for i < len(raw) && raw[i] >= 0x20 && raw[i] < 0x7f {
		i++
	}
	if i == len(raw) {
		return raw
	}
	var b strings.Builder
	b.Grow(len(raw) + 16)
	b.WriteString(raw[:i])
	for _, r := range raw[i:] {
		switch {
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default: // controls and DEL cannot stand raw in a JSON string's text but in an escape
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
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
	// 00-<32 hex>-<16 hex>-01, written in place: one allocation, the string
	var tp [55]byte
	n := copy(tp[:], "00-")
	n += copy(tp[n:], traceID)
	tp[n] = '-'
	n++
	n += hex.Encode(tp[n:], span[:])
	copy(tp[n:], "-01")
	return string(tp[:])
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
