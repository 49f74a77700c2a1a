package msgpack

import (
	"strconv"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// ContentType is the media type of a MessagePack body.
const ContentType = "application/x-msgpack"

// Limits bound what ToJSON accepts. A zero field takes its default.
type Limits struct {
	// MaxBytes bounds the size of the MessagePack document.
	MaxBytes int
	// MaxDepth bounds the nesting of arrays and maps; the top value is at depth 1 when it
	// is an array or map.
	MaxDepth int
	// MaxStringBytes bounds the length in bytes of every str (map keys included) and bin.
	MaxStringBytes int
}

// Default limits.
const (
	DefaultMaxBytes       = 16 << 20
	DefaultMaxDepth       = 64
	DefaultMaxStringBytes = 1 << 20
)

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxStringBytes <= 0 {
		l.MaxStringBytes = DefaultMaxStringBytes
	}
	return l
}

// Names of the limits, as Error.Limit reports them.
const (
	LimitBytes       = "max_bytes"
	LimitDepth       = "max_depth"
	LimitStringBytes = "max_string_bytes"
)

// Error is why a document could not be transcoded. It never repeats the input.
type Error struct {
	// Offset is where in the input the problem was found, in bytes.
	Offset int
	// Reason is a short client-safe explanation.
	Reason string
	// Limit names the limit that was exceeded (LimitBytes, LimitDepth,
	// LimitStringBytes), empty when the input is malformed or has no JSON form.
	Limit string
	// Max is the value of that limit.
	Max int
}

// Error returns "msgpack: offset N: reason".
func (e *Error) Error() string {
	return "msgpack: offset " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// Code returns the JSON-RPC code for the error: CodeInvalidRequest for an exceeded limit
// (as the JSON-RPC decoder reports its own limits), CodeParseError otherwise.
func (e *Error) Code() schemas.Code {
	if e.Limit != "" {
		return schemas.CodeInvalidRequest
	}
	return schemas.CodeParseError
}
