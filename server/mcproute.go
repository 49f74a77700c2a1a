package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// HeaderMCPUpstream names, on a request to an HTTP sampling or elicitation backend, the
// upstream MCP server the request came from.
const HeaderMCPUpstream = "Gatehouse-Mcp-Upstream"

// mcpRoutes are the backends of routing.mcp.sampling_backend and elicitation_backend for
// one configuration: the handlers behind the bridge's "route" policy. A routed method
// runs through the pipeline of the runtime the bridge belongs to, bound once it is built.
type mcpRoutes struct {
	sampling, elicitation *mcpRoute
	rt                    atomic.Pointer[runtime]
}

// mcpRoute is one backend: an HTTP endpoint or a routed method.
type mcpRoute struct {
	what   string // "sampling" or "elicitation", for errors
	routes *mcpRoutes
	http   *mcpbackend.RouteHTTPConfig // with defaults; nil for a method
	client *http.Client
	method string
}

var (
	_ mcpbackend.SamplingHandler    = (*mcpRoute)(nil)
	_ mcpbackend.ElicitationHandler = (*mcpRoute)(nil)
)

// newMCPRoutes builds the route backends of cfg; nil when none is configured.
func newMCPRoutes(cfg *routing.MCPConfig) (*mcpRoutes, error) {
	if cfg == nil || (cfg.SamplingBackend == nil && cfg.ElicitationBackend == nil) {
		return nil, nil
	}
	r := &mcpRoutes{}
	var err error
	if r.sampling, err = r.backend("sampling", cfg.SamplingBackend); err != nil {
		return nil, err
	}
	if r.elicitation, err = r.backend("elicitation", cfg.ElicitationBackend); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *mcpRoutes) backend(what string, cfg *mcpbackend.RouteConfig) (*mcpRoute, error) {
	if cfg == nil {
		return nil, nil
	}
	b := &mcpRoute{what: what, routes: r, method: cfg.Method}
	if cfg.HTTP == nil {
		return b, nil
	}
	h := cfg.HTTP.WithDefaults()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Requests are rare and nothing closes a replaced configuration's client, so no
	// connection is kept idle.
	tr.DisableKeepAlives = true
	if h.TLS != nil {
		tc, err := h.TLS.Load()
		if err != nil {
			return nil, fmt.Errorf("routing.mcp.%s_backend: %w", what, err)
		}
		tr.TLSClientConfig = tc
	}
	b.http, b.client = &h, &http.Client{Transport: tr}
	return b, nil
}

// options are the bridge options installing the handlers.
func (r *mcpRoutes) options() []mcpbackend.Option {
	if r == nil {
		return nil
	}
	var opts []mcpbackend.Option
	if r.sampling != nil {
		opts = append(opts, mcpbackend.WithSampling(r.sampling))
	}
	if r.elicitation != nil {
		opts = append(opts, mcpbackend.WithElicitation(r.elicitation))
	}
	return opts
}

// bind sets the runtime routed methods run in.
func (r *mcpRoutes) bind(rt *runtime) {
	if r != nil {
		r.rt.Store(rt)
	}
}

// CreateMessage implements mcpbackend.SamplingHandler.
func (b *mcpRoute) CreateMessage(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error) {
	return b.answer(ctx, upstream, params)
}

// Elicit implements mcpbackend.ElicitationHandler.
func (b *mcpRoute) Elicit(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error) {
	return b.answer(ctx, upstream, params)
}

// answer sends params to the backend and returns its result, a JSON object.
func (b *mcpRoute) answer(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error) {
	ctx, cancel := detached(ctx)
	defer cancel()
	var out json.RawMessage
	var err error
	if b.http != nil {
		out, err = b.post(ctx, upstream, params)
	} else {
		out, err = b.run(ctx, upstream, params)
	}
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(out); len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return nil, gateway.Errorf(schemas.CodeInternal, "The %s backend's result is not a JSON object", b.what).With("upstream", upstream)
	}
	return out, nil
}

// detached returns a context with ctx's cancellation and deadline but none of its
// values: the backend call is the gateway's own, not part of the call that caused the
// request (whose progress sink and MCP peer must not leak into it).
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.Background())
	if dl, ok := ctx.Deadline(); ok {
		var cancelDeadline context.CancelFunc
		out, cancelDeadline = context.WithDeadline(out, dl)
		prev := cancel
		cancel = func() { cancelDeadline(); prev() }
	}
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) { // the deadline is out's own
			cancel()
		}
	})
	return out, func() { stop(); cancel() }
}

// post sends params to the HTTP backend; a 2xx body (at most max_response_bytes) is the
// result.
func (b *mcpRoute) post(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, b.http.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.http.URL, bytes.NewReader(params))
	if err != nil {
		return nil, gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	for k, v := range b.http.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set(HeaderMCPUpstream, upstream)
	resp, err := b.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, gateway.AsError(ctx.Err()).With("upstream", upstream)
		}
		return nil, gateway.Errorf(schemas.CodeUnavailable, "The %s backend could not be reached", b.what).With("upstream", upstream).Wrap(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, b.http.MaxResponseBytes+1))
	switch {
	case err != nil:
		return nil, gateway.Errorf(schemas.CodeUnavailable, "The %s backend's answer could not be read", b.what).With("upstream", upstream).Wrap(err)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, gateway.Errorf(schemas.CodeUnavailable, "The %s backend answered HTTP %d", b.what, resp.StatusCode).
			With("upstream", upstream).With("status", resp.StatusCode)
	case int64(len(body)) > b.http.MaxResponseBytes:
		return nil, gateway.Errorf(schemas.CodePayloadTooLarge, "The %s backend's answer exceeds %s bytes", b.what,
			strconv.FormatInt(b.http.MaxResponseBytes, 10)).With("upstream", upstream)
	}
	return body, nil
}

// run calls the routed method through the pipeline as an internal call by the gateway on
// behalf of the upstream.
func (b *mcpRoute) run(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error) {
	rt := b.routes.rt.Load()
	if rt == nil {
		return nil, gateway.Errorf(schemas.CodeUnavailable, "The %s backend is not ready", b.what).With("upstream", upstream)
	}
	who := faces.Caller{Principal: gateway.Principal{Subject: "mcp-upstream:" + upstream}, Zone: gateway.ZoneInternal, Protocol: gateway.ProtocolMCP}
	out := rt.Pipeline().RunAs(ctx, who, b.method, params, nil)
	if out.Err != nil {
		return nil, out.Err
	}
	return out.Result, nil
}
