package mcpbackend

import (
	"context"
	"encoding/json"
	"errors"
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
//   - it answers the server's roots/list, sampling/createMessage and elicitation/create
//     requests by the upstream's configuration, passing anything else (ping) to mcp-go.
type wire struct {
	inner   transport.Interface
	up      *upstream
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

func newWire(inner transport.Interface, up *upstream) transport.Interface {
	w := &wire{inner: inner, up: up}
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

// SendRequest implements transport.Interface.
func (w *wire) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := w.inner.SendRequest(ctx, req)
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
	case string(mcp.MethodSamplingCreateMessage):
		return w.route(ctx, req, w.up.cfg.Sampling, "sampling", func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
			if h := w.up.bridge.sampling; h != nil {
				return h.CreateMessage(ctx, w.up.cfg.Name, p)
			}
			return nil, errNoHandler
		})
	case string(mcp.MethodElicitationCreate):
		return w.route(ctx, req, w.up.cfg.Elicitation, "elicitation", func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
			if h := w.up.bridge.elicitation; h != nil {
				return h.Elicit(ctx, w.up.cfg.Name, p)
			}
			return nil, errNoHandler
		})
	}
	w.mu.RLock()
	h := w.client
	w.mu.RUnlock()
	if h == nil {
		return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "Method not found", nil), nil
	}
	return h(ctx, req)
}

var errNoHandler = errors.New("no handler installed")

func (w *wire) roots(req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if len(w.up.cfg.Roots) == 0 {
		return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "The gateway declares no roots to this server", nil), nil
	}
	roots := make([]mcp.Root, 0, len(w.up.cfg.Roots))
	for _, r := range w.up.cfg.Roots {
		roots = append(roots, mcp.Root{URI: r.URI, Name: r.Name})
	}
	b, err := json.Marshal(mcp.ListRootsResult{Roots: roots})
	if err != nil {
		return nil, err
	}
	return transport.NewJSONRPCResultResponse(req.ID, b), nil
}

// route applies a sampling or elicitation policy to a request.
func (w *wire) route(ctx context.Context, req transport.JSONRPCRequest, policy, what string,
	fn func(context.Context, json.RawMessage) (json.RawMessage, error),
) (*transport.JSONRPCResponse, error) {
	refused := func() (*transport.JSONRPCResponse, error) {
		msg := req.Method + " is refused by the gateway's " + what + " policy for upstream " + w.up.cfg.Name
		return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, msg, map[string]any{"upstream": w.up.cfg.Name, "policy": policy}), nil
	}
	if policy != PolicyRoute {
		return refused()
	}
	params, err := json.Marshal(req.Params)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, w.up.cfg.RequestTimeout)
	defer cancel()
	out, err := fn(ctx, params)
	if errors.Is(err, errNoHandler) {
		return refused()
	}
	if err != nil {
		ge := gateway.AsError(err)
		if ge.Code() == schemas.CodeInternal {
			w.up.log.Warn(what+" handler failed", "err", err)
		}
		return transport.NewJSONRPCErrorResponse(req.ID, int(ge.Code()), ge.Message(), nil), nil
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
