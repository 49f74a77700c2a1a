package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Error is the one error type that crosses Gatehouse's boundary. Its code, message and data
// are safe to show a client; its cause is kept for logs and errors.Is/As and never sent.
type Error struct {
	code    schemas.Code
	message string
	data    map[string]any
	cause   error
	wire    bool
}

// NewError returns an Error with code and the table's message for it.
func NewError(code schemas.Code) *Error {
	return &Error{code: code, message: schemas.KindOf(code).Message}
}

// Errorf returns an Error with code and a client-safe message. The message must not carry
// internal detail, tokens or echoes of untrusted input.
func Errorf(code schemas.Code, format string, args ...any) *Error {
	return &Error{code: code, message: fmt.Sprintf(format, args...)}
}

// WireError returns an Error that a backend sent: code, message and data are passed through
// as the backend wrote them.
func WireError(code schemas.Code, message string, data map[string]any) *Error {
	return &Error{code: code, message: message, data: data, wire: true}
}

// With returns a copy of e with data[key] = value.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.data = make(map[string]any, len(e.data)+1)
	maps.Copy(c.data, e.data)
	c.data[key] = value
	return &c
}

// Wrap returns a copy of e whose cause is err. The cause is for logs only.
func (e *Error) Wrap(err error) *Error {
	c := *e
	c.cause = err
	return &c
}

// Code returns the JSON-RPC error code.
func (e *Error) Code() schemas.Code { return e.code }

// Message returns the client-safe message.
func (e *Error) Message() string { return e.message }

// Data returns the client-safe data members (trace_id is added by the face that encodes
// the error). The map must not be modified.
func (e *Error) Data() map[string]any { return e.data }

// IsWire reports whether the error was sent by a backend rather than made by the gateway.
func (e *Error) IsWire() bool { return e.wire }

// Error describes the error for logs, including the cause.
func (e *Error) Error() string {
	name := schemas.KindOf(e.code).Name
	if e.cause != nil {
		return fmt.Sprintf("%s (%d): %s: %v", name, e.code, e.message, e.cause)
	}
	return fmt.Sprintf("%s (%d): %s", name, e.code, e.message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same code, so sentinel errors made with
// NewError can be compared with errors.Is.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.code == e.code && t.message == e.message && t.cause == nil && len(t.data) == 0
}

// AsError converts any error into an *Error. An *Error anywhere in err's chain is returned
// as is; context cancellation and deadline errors map to their codes (with layer "gateway"
// for deadlines); anything else becomes an internal error whose text is kept only as cause.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	return wrapIfContextError(err)
}

// wrapIfContextError is the one place context errors are mapped.
func wrapIfContextError(err error) *Error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ErrDeadline(LayerGateway).Wrap(err)
	case errors.Is(err, context.Canceled):
		return NewError(schemas.CodeCancelled).Wrap(err)
	default:
		return NewError(schemas.CodeInternal).Wrap(err)
	}
}
