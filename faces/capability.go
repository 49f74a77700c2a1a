package faces

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// CapabilityInvoker returns the capability.Invoker the capability layer (nekte.invoke,
// nekte.delegate) runs capabilities with: the capability's method goes through the
// pipeline of the configuration current (the Runtime current returns, held) at the time,
// as the caller of the call whose context Invoke is given — that call's principal, zone,
// protocol and trace id — with gateway.Call.Capability set to the capability's id and the
// input as params. The deadline is ctx's (the deadline section's default when ctx has
// none, at most its max); cancelling ctx cancels the backend call; a progress sink in ctx
// receives its progress. A streamed result comes back unread: the caller must Close it,
// and the configuration serves until it does. log hears of invocations outside a call.
func CapabilityInvoker(current func() Runtime, log *slog.Logger) capability.Invoker {
	return capabilityInvoker{current: current, log: log}
}

// capabilityInvoker is CapabilityInvoker's.
type capabilityInvoker struct {
	current func() Runtime
	log     *slog.Logger
}

var _ capability.Invoker = capabilityInvoker{}

// errNoCaller refuses an invocation whose context carries no call to take the caller from.
var errNoCaller = gateway.NewError(schemas.CodeInternal).With("reason", "a capability can only be invoked within a call")

// Invoke implements capability.Invoker.
func (inv capabilityInvoker) Invoke(ctx context.Context, c capability.Capability, input json.RawMessage) (*gateway.Result, error) {
	origin := gateway.CallFrom(ctx)
	if origin == nil {
		inv.log.ErrorContext(ctx, "capability invoked outside a call", "capability", c.ID, "method", c.Method)
		return nil, errNoCaller
	}
	if c.ID == "" || c.Method == "" {
		inv.log.ErrorContext(ctx, "capability without an id or a method", "capability", c.ID, "method", c.Method, "trace_id", origin.TraceID)
		return nil, gateway.NewError(schemas.CodeInternal).With("reason", "the capability names no method")
	}
	if task := nekte.TaskIDFrom(ctx); task != "" {
		// A delegated task's work logs under the task and its agent — the delegating
		// caller, hashed as the access log hashes callers.
		ctx = observability.WithLogIDs(ctx, observability.LogIDs{TaskID: task, AgentID: observability.CallerHash(origin.Principal.Subject)})
	}
	rt := inv.current()
	out := rt.Pipeline().RunAs(ctx, Caller{
		Principal:  origin.Principal,
		Zone:       origin.Zone,
		Protocol:   origin.Protocol,
		TraceID:    origin.TraceID,
		Capability: c.ID,
	}, c.Method, input, nil)
	if out.Err != nil {
		rt.Release()
		return nil, out.Err
	}
	res := out.Res
	if res.Stream == nil {
		rt.Release()
		return res, nil
	}
	res.Stream = gateway.AfterClose(res.Stream, rt.Release) // the configuration serves until the stream is closed
	return res, nil
}
