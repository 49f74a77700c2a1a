package client

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Exit codes of the client commands, one per class of error (docs/cli.md has the table).
const (
	ExitOK          = 0   // the call succeeded
	ExitError       = 1   // the gateway answered with an error of no other class (a task failed, an internal error)
	ExitUsage       = 2   // bad arguments or input files: nothing was sent
	ExitTransport   = 3   // the gateway could not be reached, or answered with something that is not JSON-RPC
	ExitAuth        = 4   // refused credential, missing scope, approval denied or pending (4000–4999)
	ExitInvalid     = 5   // invalid request or params, unknown method, capability or task
	ExitUnavailable = 6   // backend unavailable, breaker open, overloaded, draining, or a deadline passed
	ExitInterrupted = 130 // Ctrl-C (SIGINT): a delegated task was cancelled first
)

// UsageError is a mistake in the command line or its input files.
type UsageError struct {
	Msg string
	// Shown: the message was already written (the flag package writes its own, with
	// the command's flags).
	Shown bool
}

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ErrInterrupted ends a command the user interrupted (Ctrl-C).
var ErrInterrupted = errors.New("interrupted")

// ExitCode is the exit code for err (nil: ExitOK).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, ErrInterrupted) {
		return ExitInterrupted
	}
	if _, ok := errors.AsType[*UsageError](err); ok {
		return ExitUsage
	}
	if re, ok := errors.AsType[*RPCError](err); ok {
		return CodeExit(re.Code)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ExitUnavailable // --timeout ran out
	}
	return ExitTransport
}

// CodeExit is the exit code for a JSON-RPC error code.
func CodeExit(code int) int {
	if code < math.MinInt32 || code > math.MaxInt32 {
		return ExitError
	}
	switch c := schemas.Code(code); {
	case c >= schemas.CodeAuthorization && c < schemas.CodeQuota:
		return ExitAuth
	case c == schemas.CodeParseError, c == schemas.CodeInvalidRequest, c == schemas.CodeMethodNotFound,
		c == schemas.CodeInvalidParams, c == schemas.CodeCapabilityNotFound, c == schemas.CodeTaskNotFound,
		c == schemas.CodeTaskNotCancellable, c == schemas.CodeTaskNotResumable, c == schemas.CodeVersionMismatch,
		c == schemas.CodeDeprecatedVersion, c == schemas.CodeUnsupportedMedia, c == schemas.CodePayloadTooLarge,
		c == schemas.CodeContextExpired, c == schemas.CodeContextPermissionDenied:
		return ExitInvalid
	case c == schemas.CodeDeadlineExceeded, c == schemas.CodeUnavailable, c == schemas.CodeCircuitOpen,
		c == schemas.CodeShuttingDown, c == schemas.CodeTooManyConnections, c == schemas.CodeTaskTimeout,
		c == schemas.CodeAgentTimeout, c == schemas.CodeAgentGone, c == schemas.CodeNoAgent,
		c == schemas.CodeRateLimited, c == schemas.CodeOverloaded:
		return ExitUnavailable
	}
	return ExitError
}
