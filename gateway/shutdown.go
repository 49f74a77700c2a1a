package gateway

import (
	"context"
	"errors"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// ErrShuttingDown is the cause a server gives the contexts of the calls still running when
// its shutdown grace is about to end. A call cut off by it is answered with ShutdownError
// — a typed error the client can retry elsewhere — instead of a closed connection.
var ErrShuttingDown = errors.New("the gateway is shutting down")

// ShutdownRetryAfterMs is the retry hint of ShutdownError: another replica, or this one
// restarted, can take the call.
const ShutdownRetryAfterMs = 1000

// ShutdownError is the error of a call cut off by the shutdown grace: SHUTTING_DOWN with
// reason "grace_ended" and a retry hint.
func ShutdownError() *Error {
	return NewError(schemas.CodeShuttingDown).With("reason", "grace_ended").With("retry_after_ms", ShutdownRetryAfterMs)
}

// CutOffByShutdown reports whether ctx ended because the server is shutting down.
func CutOffByShutdown(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrShuttingDown)
}
