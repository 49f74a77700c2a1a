package mcpbackend

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

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// HeaderUpstream names, on a request to an HTTP sampling or elicitation backend, the
// upstream MCP server the request came from.
const HeaderUpstream = "Gatehouse-Mcp-Upstream"

// RunFunc runs method through the gateway's pipeline as an internal call by principal,
// with params as its params, and returns its result. On return, the result is non-nil iff
// err is nil.
type RunFunc func(ctx context.Context, principal gateway.Principal, method string, params json.RawMessage) (json.RawMessage, error)

// RouteBackends are the backends of routing.mcp.sampling_backend and elicitation_backend
// for one configuration: the handlers behind the bridge's "route" policy. A routed method
// runs through the pipeline of the configuration the bridge belongs to, bound (Bind) once
// it is built.
type RouteBackends struct {
	sampling, elicitation *routeBackend
	run                   atomic.Pointer[RunFunc]
}

// routeBackend is one backend: an HTTP endpoint or a routed method.
type routeBackend struct {
	what     string // "sampling" or "elicitation", for errors
	backends *RouteBackends
	http     *RouteHTTPConfig // with defaults; nil for a method
	client   *http.Client
	method   string
}

var (
	_ SamplingHandler    = (*routeBackend)(nil)
	_ ElicitationHandler = (*routeBackend)(nil)
)

// NewRouteBackends builds the route backends of sampling and elicitation (each nil when
// not configured); nil when neither is.
func NewRouteBackends(sampling, elicitation *RouteConfig) (*RouteBackends, error) {
	if sampling == nil && elicitation == nil {
		return nil, nil
	}
	r := &RouteBackends{}
	var err error
	if r.sampling, err = r.backend("sampling", sampling); err != nil {
		return nil, err
	}
	if r.elicitation, err = r.backend("elicitation", elicitation); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *RouteBackends) backend(what string, cfg *RouteConfig) (*routeBackend, error) {
	if cfg == nil {
		return nil, nil
	}
	b := &routeBackend{what: what, backends: r, method: cfg.Method}
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

// Options are the bridge options installing the handlers (none for nil r).
func (r *RouteBackends) Options() []Option {
	if r == nil {
		return nil
	}
	var opts []Option
	if r.sampling != nil {
		opts = append(opts, WithSampling(r.sampling))
	}
	if r.elicitation != nil {
		opts = append(opts, WithElicitation(r.elicitation))
	}
	return opts
}

// Bind sets how routed methods run: through the pipeline of the configuration the
// backends belong to. Until then a routed method is not ready. Nil r ignores it.
func (r *RouteBackends) Bind(run RunFunc) {
	if r != nil {
		r.run.Store(&run)
	}
}

// CreateMessage implements SamplingHandler.
func (b *routeBackend) CreateMessage(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error) {
	return b.answer(ctx, upstream, params)
}

// Elicit implements ElicitationHandler.
func (b *routeBackend) Elicit(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error) {
	return b.answer(ctx, upstream, params)
}

// answer sends params to the backend and returns its result, a JSON object.
func (b *routeBackend) answer(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error) {
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
func (b *routeBackend) post(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error) {
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
	req.Header.Set(HeaderUpstream, upstream)
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
func (b *routeBackend) run(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error) {
	run := b.backends.run.Load()
	if run == nil {
		return nil, gateway.Errorf(schemas.CodeUnavailable, "The %s backend is not ready", b.what).With("upstream", upstream)
	}
	return (*run)(ctx, gateway.Principal{Subject: "mcp-upstream:" + upstream}, b.method, params)
}
