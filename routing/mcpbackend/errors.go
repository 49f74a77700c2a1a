package mcpbackend

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// unavailable is the error for a call the upstream cannot take: UNAVAILABLE with data
// {upstream, reason, retry_after_ms}. An empty reason is the upstream's own.
func (u *upstream) unavailable(reason string) *gateway.Error {
	st := u.status()
	if reason == "" {
		reason = st.Reason
	}
	if reason == "" {
		reason = "no live session"
	}
	e := gateway.NewError(schemas.CodeUnavailable).With("upstream", u.cfg.Name).With("reason", reason)
	if st.RetryAfterMs > 0 {
		e = e.With("retry_after_ms", st.RetryAfterMs).With("recovery_hint", "RETRY_WITH_BACKOFF")
	}
	return e
}

// overloaded is the error for a call refused by the concurrency cap.
func (u *upstream) overloaded() *gateway.Error {
	return gateway.NewError(schemas.CodeOverloaded).With("upstream", u.cfg.Name).
		With("retry_after_ms", u.retryAfterMs()).With("recovery_hint", "RETRY_WITH_BACKOFF")
}

// wrapContext maps the caller's context error, naming the upstream.
func wrapContext(err error, upstream string) *gateway.Error {
	return gateway.AsError(err).With("upstream", upstream)
}

// callError maps a failed request. ctx is the caller's context and rctx the request's
// (the caller's bounded by the request timeout and the hop reserve). A caller that went
// away is CANCELLED; a request whose deadline passed is DEADLINE_EXCEEDED at layer
// upstream, whichever of the request timeout and the call's deadline it was.
func (u *upstream) callError(ctx, rctx context.Context, s *session, err error, x *exchange) *gateway.Error {
	switch {
	case x != nil && x.rpcErr != nil:
		return u.wireError(x)
	case errors.Is(ctx.Err(), context.Canceled):
		return wrapContext(ctx.Err(), u.cfg.Name)
	case rctx.Err() != nil: // rctx's deadline is never later than ctx's: the upstream was being waited on
		return gateway.ErrDeadline(gateway.LayerUpstream).With("upstream", u.cfg.Name).Wrap(err)
	case isGatewayError(err):
		return u.inputFailed(err)
	case u.cfg.Stdio == nil && isExpiry(err, x):
		return u.unavailable("session expired").Wrap(err)
	case errors.Is(err, transport.ErrTransportClosed) || s.isDead():
		return u.unavailable(s.deathReason()).Wrap(err)
	}
	if _, ok := errors.AsType[*transport.Error](err); ok {
		return u.unavailable("request failed").Wrap(err)
	}
	return gateway.NewError(schemas.CodeInternal).With("upstream", u.cfg.Name).Wrap(err)
}

// wireError passes an upstream's JSON-RPC error through, adding the upstream's name to
// its data (an object's members are kept; any other data is under "data").
func (u *upstream) wireError(x *exchange) *gateway.Error {
	data := map[string]any{}
	if x.rpcErr.Data != nil {
		raw, _ := json.Marshal(x.rpcErr.Data)
		if json.Unmarshal(raw, &data) != nil {
			data = map[string]any{"data": x.rpcErr.Data}
		}
	}
	data["upstream"] = u.cfg.Name
	return gateway.WireError(schemas.Code(x.rpcErr.Code), x.rpcErr.Message, data) //nolint:gosec // JSON-RPC codes fit int32
}

// inputFailed is the error for a call whose multi round-trip input request (sampling,
// elicitation) the gateway refused or could not get answered: DEPENDENCY_FAILED with the
// refusal's message and data, so the call is not mistaken for an unknown method.
func (u *upstream) inputFailed(err error) *gateway.Error {
	ge, _ := errors.AsType[*gateway.Error](err)
	e := gateway.Errorf(schemas.CodeDependencyFailed, "%s", ge.Message())
	for k, v := range ge.Data() {
		e = e.With(k, v)
	}
	return e.With("upstream", u.cfg.Name).With("code", int(ge.Code()))
}

func isGatewayError(err error) bool {
	_, ok := errors.AsType[*gateway.Error](err)
	return ok
}
