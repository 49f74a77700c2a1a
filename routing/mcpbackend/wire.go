package mcpbackend

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// wire sits between the mcp-go client and its transport. It is where the bridge sees
// JSON-RPC as sent and received:
//
//   - it keeps the raw result (or error object) of a request for the caller that asked
//     with withExchange, so results are relayed byte for byte instead of through mcp-go's
//     typed structs (which drop JSON Schema keywords and unknown members);
//   - over HTTP it sends notifications/cancelled for a request whose context ended, which
//     mcp-go only does over stdio (client.cancelRequest skips HTTP connections; on the
//     stateless 2026-07-28 revision ending the HTTP request is the cancellation, so
//     nothing is sent there);
//   - it settles the hop credential in params._meta of every request (SendRequest) and,
//     for a traced call, makes each request a client span whose trace context travels in
//     params._meta over stdio (trace.go);
//   - it answers the server's roots/list, sampling/createMessage and elicitation/create
//     requests by the upstream's configuration (upstream.answer), passing anything else
//     (ping) to mcp-go. Over streamable HTTP a request that arrives on a call's response
//     stream is handled in that call's context, which is how it is attributed to the
//     call's caller exactly.
type wire struct {
	inner   transport.Interface
	s       *session
	version atomic.Value // string: the negotiated protocol version (HTTP only)
	isHTTP  bool

	mu     sync.RWMutex
	client transport.RequestHandler

	cancels sync.WaitGroup // notifications/cancelled being sent
}

// httpWire is a wire over an HTTP transport: mcp-go finds transport.HTTPConnection on
// it, as on the transport itself, so headers and session handling stay as they are.
type httpWire struct {
	*wire
}

var (
	_ transport.BidirectionalInterface = (*wire)(nil)
	_ transport.HTTPConnection         = httpWire{}
)

func newWire(inner transport.Interface, s *session) transport.Interface {
	w := &wire{inner: inner, s: s}
	w.version.Store("")
	if bi, ok := inner.(transport.BidirectionalInterface); ok {
		bi.SetRequestHandler(w.handle)
	}
	if _, ok := inner.(transport.HTTPConnection); ok {
		w.isHTTP = true
		return httpWire{w}
	}
	return w
}

// wireOf returns the wire under a client's transport.
func wireOf(t transport.Interface) *wire {
	switch w := t.(type) {
	case *wire:
		return w
	case httpWire:
		return w.wire
	}
	return nil
}

// SetProtocolVersion implements transport.HTTPConnection.
func (h httpWire) SetProtocolVersion(version string) {
	h.version.Store(version)
	h.inner.(transport.HTTPConnection).SetProtocolVersion(version)
}

// RequiresLegacyProtocol forwards the streamable HTTP transport's answer (continuous
// listening rules the stateless revision out).
func (h httpWire) RequiresLegacyProtocol() bool {
	l, ok := h.inner.(interface{ RequiresLegacyProtocol() bool })
	return ok && l.RequiresLegacyProtocol()
}

// Start implements transport.Interface.
func (w *wire) Start(ctx context.Context) error { return w.inner.Start(ctx) }

// Close implements transport.Interface; it waits for cancellation notices being sent.
func (w *wire) Close() error {
	err := w.inner.Close()
	w.cancels.Wait()
	return err
}

// GetSessionId implements transport.Interface.
func (w *wire) GetSessionId() string { return w.inner.GetSessionId() }

// SetNotificationHandler implements transport.Interface.
func (w *wire) SetNotificationHandler(h func(mcp.JSONRPCNotification)) {
	w.inner.SetNotificationHandler(h)
}

// SetRequestHandler implements transport.BidirectionalInterface: mcp-go's own handler
// answers what handle does not.
func (w *wire) SetRequestHandler(h transport.RequestHandler) {
	w.mu.Lock()
	w.client = h
	w.mu.Unlock()
}

// SendNotification implements transport.Interface.
func (w *wire) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	return w.inner.SendNotification(ctx, n)
}

// SendRequest implements transport.Interface. Every request leaves through here, so this
// is where params._meta[MetaKeyAuthorization] is settled: a stdio upstream gets the hop
// credential of the call whose context ctx is, and any other value is removed; and where a
// traced call's request becomes a client span, whose trace context a stdio upstream gets
// in params._meta (traceparent, tracestate). (Over HTTP the credential and the trace
// context travel in headers: upstream.hopHeaders.)
func (w *wire) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	ctx, span := w.startSpan(ctx, req)
	var hop hopMeta
	if w.s.up.cfg.Stdio != nil {
		hop.bearer = w.s.up.hopBearer(ctx)
		hop.traceparent, hop.tracestate = traceContext(ctx)
	}
	params, err := withHopMeta(req.Params, hop)
	if err != nil {
		endSpan(span, nil, err)
		return nil, err
	}
	req.Params = params
	resp, err := w.inner.SendRequest(ctx, req)
	endSpan(span, resp, err)
	w.s.noteProbe(req, resp, err) // discover.go
	if x := exchangeFrom(ctx); x != nil {
		x.requests++
		if err == nil && resp != nil {
			x.result, x.rpcErr = resp.Result, resp.Error
		}
	}
	if err != nil && ctx.Err() != nil && w.isHTTP && req.Method != string(mcp.MethodInitialize) &&
		!mcp.IsModernProtocol(w.version.Load().(string)) {
		w.sendCancelled(ctx, req.ID)
	}
	return resp, err
}

// sendCancelled tells the server, off the caller's path, that it may stop working on id.
func (w *wire) sendCancelled(ctx context.Context, id mcp.RequestId) {
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationCancelled),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": ctx.Err().Error()}},
	}}
	w.cancels.Go(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = w.inner.SendNotification(ctx, n)
	})
}

// handle answers a request the server sent.
func (w *wire) handle(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	switch req.Method {
	case string(mcp.MethodListRoots):
		return w.roots(req)
	case methodSampling, methodElicitation:
		return w.answer(ctx, req)
	}
	w.mu.RLock()
	h := w.client
	w.mu.RUnlock()
	if h == nil {
		return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "Method not found", nil), nil
	}
	return h(ctx, req)
}

func (w *wire) roots(req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if len(w.s.up.cfg.Roots) == 0 {
		return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "The gateway declares no roots to this server", nil), nil
	}
	roots := make([]mcp.Root, 0, len(w.s.up.cfg.Roots))
	for _, r := range w.s.up.cfg.Roots {
		roots = append(roots, mcp.Root{URI: r.URI, Name: r.Name})
	}
	b, err := json.Marshal(mcp.ListRootsResult{Roots: roots})
	if err != nil {
		return nil, err
	}
	return transport.NewJSONRPCResultResponse(req.ID, b), nil
}

// answer applies the upstream's sampling or elicitation policy to a request; the params
// and the result are relayed as raw JSON.
func (w *wire) answer(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	params, err := json.Marshal(req.Params)
	if err != nil {
		return nil, err
	}
	out, err := w.s.up.answer(ctx, w.s, req.Method, params)
	if err != nil {
		ge := gateway.AsError(err)
		if ge.Code() == schemas.CodeInternal {
			w.s.up.log.Warn("answering a server request failed", "method", req.Method, "err", err)
		}
		var data any
		if d := ge.Data(); len(d) > 0 {
			data = d
		}
		return transport.NewJSONRPCErrorResponse(req.ID, int(ge.Code()), ge.Message(), data), nil
	}
	return transport.NewJSONRPCResultResponse(req.ID, out), nil
}

// exchange receives the raw outcome of the requests sent under a context.
type exchange struct {
	result   json.RawMessage
	rpcErr   *mcp.JSONRPCErrorDetails
	requests int
}

type exchangeKey struct{}

func withExchange(ctx context.Context, x *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, x)
}

func exchangeFrom(ctx context.Context) *exchange {
	x, _ := ctx.Value(exchangeKey{}).(*exchange)
	return x
}
