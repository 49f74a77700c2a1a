package gateway

import "context"

// Target is a backend a routed call is dispatched to: a gRPC method, an MCP tool, a NEKTE
// primitive, an agent, or a built-in method set.
//
// Invoke follows the Handler contract: the result is non-nil iff err is nil, and Invoke
// returns promptly once ctx is done. Errors a Target returns should be *Error values; any
// other error is reported to the caller as an internal error without its text.
type Target interface {
	// Name identifies the target in logs, metrics and readiness detail.
	Name() string
	// Invoke runs call against the backend.
	Invoke(ctx context.Context, call *Call) (*Result, error)
}

// Readier is implemented by targets that can report whether their backend is usable.
type Readier interface {
	// Ready returns nil when the target can serve calls.
	Ready(ctx context.Context) error
}

// Closer is implemented by targets that hold resources (connections, child processes). The
// server calls Close once, after the last call using the target has finished.
type Closer interface {
	Close() error
}

// Authenticator turns transport credentials into a Principal before any payload is decoded.
type Authenticator interface {
	// Authenticate returns the caller's principal, or an *Error with an authentication code.
	Authenticate(ctx context.Context, creds Credentials) (Principal, error)
}
