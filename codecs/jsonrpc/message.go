package jsonrpc

import "github.com/gatehouse-dev/gatehouse/schemas"

// Limits bound what the decoder accepts. A zero field takes the Default value.
type Limits struct {
	// MaxDepth is the deepest nesting of arrays and objects allowed anywhere in the body; a
	// batch array counts as one level. Decode recurses once per level up to MaxDepth, so it
	// should stay modest; past it, the rest of the body is checked without recursion.
	MaxDepth int
	// MaxStringBytes bounds the length of every string (member names included), measured in
	// bytes of the raw JSON text between the quotes.
	MaxStringBytes int
	// MaxBatch bounds the members of a batch. The decoder stops building members past it
	// (while still checking the rest of the body's syntax), so an oversized batch costs no
	// memory per member.
	MaxBatch int
}

// Default limits.
const (
	DefaultMaxDepth       = 64
	DefaultMaxStringBytes = 1 << 20
	DefaultMaxBatch       = 1000
)

// Request is one well-formed JSON-RPC 2.0 request or notification.
type Request struct {
	// Method is the decoded method name.
	Method string
	// Params is the raw JSON of params (an object or an array), nil when absent. For object
	// params the reserved members depends_on and deadline_ms are removed. Params aliases the
	// decoded body unless a reserved member had to be removed; its capacity equals its
	// length, so appending to it never writes into the body.
	Params []byte
	// ID is the request id; the zero ID marks a notification.
	ID ID
	// DependsOn lists the ids named in params.depends_on (object params only).
	DependsOn []ID
	// DeadlineMs is params.deadline_ms (epoch milliseconds), 0 when absent.
	DeadlineMs int64
}

// IsNotification reports whether the request expects no response.
func (r *Request) IsNotification() bool { return r.ID.IsZero() }

// DecodeError is why a body, or one member of a batch, is not a valid request.
type DecodeError struct {
	// Code is CodeParseError, CodeInvalidRequest or CodeInvalidParams.
	Code schemas.Code
	// Reason is a short client-safe explanation; it never echoes input.
	Reason string
	// Limit names the limit that was exceeded ("max_depth", "max_string_bytes"), if any.
	Limit string
	// Max is the value of that limit.
	Max int
	// ID is the member's id when it was read before the error was found, else the zero ID
	// (which encodes as null in the error response).
	ID ID
}

var _ error = (*DecodeError)(nil)

// Error implements error.
func (e *DecodeError) Error() string {
	return schemas.KindOf(e.Code).Name + ": " + e.Reason
}

// Member is one element of a decoded payload: a request, or the error that replaces it.
type Member struct {
	// Request is the decoded request; it is the zero Request when Err is set.
	Request Request
	// Err is why the member is not a valid request (CodeInvalidRequest or
	// CodeInvalidParams), nil when Request is valid.
	Err *DecodeError
}

// Payload is a decoded body: one member for a single request, or every member of a batch in
// order.
type Payload struct {
	// Batch reports whether the body was an array.
	Batch bool
	// Members holds one member per request, in body order; never empty when Decode
	// succeeds.
	Members []Member
}
