package mcpbackend

import (
	"context"
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// SamplingHandler answers sampling/createMessage requests from upstreams whose sampling
// policy is "route". RouteBackends implements it by sending them to a configured backend
// (a routed method, a gRPC backend's among them, or an HTTP endpoint).
//
// CreateMessage receives the request's params as the upstream sent them and returns the
// CreateMessageResult JSON. An error that is a *gateway.Error is sent to the upstream with
// its code and message; any other error is sent as an internal error without its text.
type SamplingHandler interface {
	CreateMessage(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error)
}

// ElicitationHandler answers elicitation/create requests from upstreams whose
// elicitation policy is "route", with the same contract as SamplingHandler.
type ElicitationHandler interface {
	Elicit(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error)
}

// Option configures a Bridge.
type Option func(*Bridge)

// WithSampling sets the handler for upstreams whose sampling policy is "route". Without
// one, their requests are refused like under "refuse".
func WithSampling(h SamplingHandler) Option { return func(b *Bridge) { b.sampling = h } }

// WithElicitation sets the handler for upstreams whose elicitation policy is "route".
func WithElicitation(h ElicitationHandler) Option { return func(b *Bridge) { b.elicitation = h } }

// WithSessionStarted sets fn to be told, with the upstream's configured name, of every MCP
// session that starts — the first of each slot and every restart (the metrics count them).
// fn runs on the upstream's supervisor goroutine and must not block.
func WithSessionStarted(fn func(upstream string)) Option {
	return func(b *Bridge) { b.sessionStarted = fn }
}

// Progress is one notifications/progress an upstream sent for a call. It is
// gateway.Progress: one progress mechanism serves every face.
type Progress = gateway.Progress

// WithProgress returns a context under which Bridge.CallTool asks the upstream for
// progress (it sends a progress token) and passes each progress notification to fn, in
// order, from one goroutine at a time. fn must not block: it runs on the upstream
// connection's reader. It is gateway.WithProgress, so a sink any face set reaches the
// upstream the same way.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return gateway.WithProgress(ctx, fn)
}

func progressFrom(ctx context.Context) func(Progress) { return gateway.ProgressFrom(ctx) }
