package gateway

import (
	"context"
	"time"
)

// Observer receives the measurements a target makes while it serves a call: the time its
// transcoding plans take, the streams it holds open, the tool calls it makes. The server's
// metrics stage puts one in the context of every call (WithObserver); a target reads it
// with ObserverFrom and never needs to know how the numbers are kept.
//
// Label values must come from bounded sets — descriptors of configured backends, tools of
// the catalog, configured server names — never from what a caller sent. Implementations
// must be safe for concurrent use and must not block.
type Observer interface {
	// Transcoded reports one message of method transcoded from the source to the target
	// protocol ("jsonrpc", "grpc"), which took d.
	Transcoded(source, target, method string, d time.Duration)
	// StreamOpened reports a streaming RPC of service and method opened; the function it
	// returns reports it closed and must be called exactly once.
	StreamOpened(service, method string) (closed func())
	// ToolCalled reports one tool call to an MCP server, which took d.
	ToolCalled(tool, server string, d time.Duration)
}

type observerKey struct{}

// WithObserver returns a context whose calls report to o; a nil o leaves ctx as it is.
func WithObserver(ctx context.Context, o Observer) context.Context {
	if o == nil {
		return ctx
	}
	return context.WithValue(ctx, observerKey{}, o)
}

// FromCall implements CallKey.
func (observerKey) FromCall(c *Call, _ context.Context) (any, bool) {
	return c.vals.observer, c.vals.observer != nil
}

// WithObserverFor is WithObserver for the stage running call: when ctx is call's context
// (WithCall) the observer is kept on call and ctx is returned as it is — no context per
// stage; otherwise it is WithObserver.
func WithObserverFor(ctx context.Context, call *Call, o Observer) context.Context {
	if o == nil {
		return ctx
	}
	if carries(ctx, call) {
		call.vals.observer = o
		return ctx
	}
	return WithObserver(ctx, o)
}

// ObserverFrom returns the observer ctx carries (WithObserver), or one that discards
// everything; never nil.
func ObserverFrom(ctx context.Context) Observer {
	if o, ok := ctx.Value(observerKey{}).(Observer); ok {
		return o
	}
	return discard{}
}

// discard is the Observer of a context without one.
type discard struct{}

func (discard) Transcoded(string, string, string, time.Duration) {}
func (discard) StreamOpened(string, string) func()               { return func() {} }
func (discard) ToolCalled(string, string, time.Duration)         {}
