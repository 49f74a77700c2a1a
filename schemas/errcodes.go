package schemas

import (
	"net/http"

	"google.golang.org/grpc/codes"
)

// Code is a JSON-RPC error code as it appears in error.code on the wire.
type Code int32

// JSON-RPC 2.0 standard codes.
const (
	CodeParseError     Code = -32700
	CodeInvalidRequest Code = -32600
	CodeMethodNotFound Code = -32601
	CodeInvalidParams  Code = -32602
	CodeInternal       Code = -32603
)

// Gateway server errors, in the range JSON-RPC reserves for implementations
// (-32000 … -32099), outside the NEKTE block -32001 … -32011.
const (
	CodeDeadlineExceeded   Code = -32000
	CodeUnavailable        Code = -32020
	CodeCircuitOpen        Code = -32021
	CodeDeprecatedVersion  Code = -32022
	CodeShuttingDown       Code = -32023
	CodeCancelled          Code = -32024
	CodeDependencyFailed   Code = -32025
	CodeUnsupportedMedia   Code = -32026
	CodePayloadTooLarge    Code = -32027
	CodeTooManyConnections Code = -32028
)

// NEKTE protocol codes (nekte-wire.md).
const (
	CodeVersionMismatch         Code = -32001
	CodeCapabilityNotFound      Code = -32002
	CodeBudgetExceeded          Code = -32003
	CodeContextExpired          Code = -32004
	CodeContextPermissionDenied Code = -32005
	CodeTaskTimeout             Code = -32006
	CodeTaskFailed              Code = -32007
	CodeVerificationFailed      Code = -32008
	CodeTaskNotFound            Code = -32009
	CodeTaskNotCancellable      Code = -32010
	CodeTaskNotResumable        Code = -32011
)

// Application ranges: 1000–1999 agent execution, 2000–2999 retrieval, 3000–3999 memory,
// 4000–4999 authorization, 5000–5999 rate and quota.
const (
	CodeAgentExecution    Code = 1000
	CodeToolFailed        Code = 1001
	CodeAgentRejected     Code = 1002
	CodeAgentTaskFailed   Code = 1003
	CodeAgentTimeout      Code = 1004
	CodeAgentGone         Code = 1005
	CodeNoAgent           Code = 1006
	CodeRetrieval         Code = 2000
	CodeMemory            Code = 3000
	CodeAuthorization     Code = 4000
	CodeAuthentication    Code = 4001
	CodeInsufficientScope Code = 4002
	CodeApprovalDenied    Code = 4003
	CodeApprovalPending   Code = 4004
	CodeQuota             Code = 5000
	CodeRateLimited       Code = 5001
	CodeOverloaded        Code = 5002
	CodeBudgetExhausted   Code = 5003
)

// Kind describes one row of the error table: the JSON-RPC code, its stable name, the
// message clients see, and its gRPC and HTTP equivalents.
//
// HTTP is the status used when the error ends an HTTP exchange before a JSON-RPC response
// can be written, and by faces that speak plain HTTP. A JSON-RPC error inside a normal
// JSON-RPC response travels with HTTP 200 (clients such as the NEKTE reference treat any
// non-2xx status as a transport failure), except that the response to a single request
// refused with 4002, 4003, 5001 or 5002 takes this status, so HTTP intermediaries can act
// on it — but for nekte.* methods (docs/protocol.md).
type Kind struct {
	Code    Code
	Name    string
	Message string
	GRPC    codes.Code
	HTTP    int
}

// table is the one list of error kinds. Every face maps errors through it.
var table = []Kind{
	{CodeParseError, "PARSE_ERROR", "Parse error", codes.InvalidArgument, http.StatusBadRequest},
	{CodeInvalidRequest, "INVALID_REQUEST", "Invalid Request", codes.InvalidArgument, http.StatusBadRequest},
	{CodeMethodNotFound, "METHOD_NOT_FOUND", "Method not found", codes.Unimplemented, http.StatusNotFound},
	{CodeInvalidParams, "INVALID_PARAMS", "Invalid params", codes.InvalidArgument, http.StatusBadRequest},
	{CodeInternal, "INTERNAL_ERROR", "Internal error", codes.Internal, http.StatusInternalServerError},

	{CodeDeadlineExceeded, "DEADLINE_EXCEEDED", "Deadline exceeded", codes.DeadlineExceeded, http.StatusGatewayTimeout},
	{CodeUnavailable, "UNAVAILABLE", "Backend unavailable", codes.Unavailable, http.StatusServiceUnavailable},
	{CodeCircuitOpen, "CIRCUIT_OPEN", "Circuit open", codes.Unavailable, http.StatusServiceUnavailable},
	{CodeDeprecatedVersion, "DEPRECATED_VERSION", "Method version is past its sunset date", codes.FailedPrecondition, http.StatusGone},
	{CodeShuttingDown, "SHUTTING_DOWN", "Server is shutting down", codes.Unavailable, http.StatusServiceUnavailable},
	{CodeCancelled, "CANCELLED", "Request cancelled", codes.Canceled, 499},
	{CodeDependencyFailed, "DEPENDENCY_FAILED", "A request this one depends on failed", codes.FailedPrecondition, http.StatusFailedDependency},
	{CodeUnsupportedMedia, "UNSUPPORTED_MEDIA_TYPE", "Unsupported media type", codes.InvalidArgument, http.StatusUnsupportedMediaType},
	{CodePayloadTooLarge, "PAYLOAD_TOO_LARGE", "Request body too large", codes.ResourceExhausted, http.StatusRequestEntityTooLarge},
	{CodeTooManyConnections, "TOO_MANY_CONNECTIONS", "Too many connections", codes.ResourceExhausted, http.StatusServiceUnavailable},

	{CodeVersionMismatch, "VERSION_MISMATCH", "VERSION_MISMATCH", codes.FailedPrecondition, http.StatusConflict},
	{CodeCapabilityNotFound, "CAPABILITY_NOT_FOUND", "CAPABILITY_NOT_FOUND", codes.NotFound, http.StatusNotFound},
	{CodeBudgetExceeded, "BUDGET_EXCEEDED", "BUDGET_EXCEEDED", codes.ResourceExhausted, http.StatusUnprocessableEntity},
	{CodeContextExpired, "CONTEXT_EXPIRED", "CONTEXT_EXPIRED", codes.NotFound, http.StatusGone},
	{CodeContextPermissionDenied, "CONTEXT_PERMISSION_DENIED", "CONTEXT_PERMISSION_DENIED", codes.PermissionDenied, http.StatusForbidden},
	{CodeTaskTimeout, "TASK_TIMEOUT", "TASK_TIMEOUT", codes.DeadlineExceeded, http.StatusGatewayTimeout},
	{CodeTaskFailed, "TASK_FAILED", "TASK_FAILED", codes.Aborted, http.StatusBadGateway},
	{CodeVerificationFailed, "VERIFICATION_FAILED", "VERIFICATION_FAILED", codes.DataLoss, http.StatusUnprocessableEntity},
	{CodeTaskNotFound, "TASK_NOT_FOUND", "TASK_NOT_FOUND", codes.NotFound, http.StatusNotFound},
	{CodeTaskNotCancellable, "TASK_NOT_CANCELLABLE", "TASK_NOT_CANCELLABLE", codes.FailedPrecondition, http.StatusConflict},
	{CodeTaskNotResumable, "TASK_NOT_RESUMABLE", "TASK_NOT_RESUMABLE", codes.FailedPrecondition, http.StatusConflict},

	{CodeAgentExecution, "AGENT_EXECUTION_FAILED", "Agent execution failed", codes.Aborted, http.StatusBadGateway},
	{CodeToolFailed, "TOOL_FAILED", "Tool call failed", codes.Aborted, http.StatusBadGateway},
	{CodeAgentRejected, "AGENT_TASK_REJECTED", "The agent rejected the task", codes.FailedPrecondition, http.StatusBadGateway},
	{CodeAgentTaskFailed, "AGENT_TASK_FAILED", "The agent's task failed", codes.Aborted, http.StatusBadGateway},
	{CodeAgentTimeout, "AGENT_TASK_TIMEOUT", "The agent's task timed out", codes.DeadlineExceeded, http.StatusGatewayTimeout},
	{CodeAgentGone, "AGENT_GONE", "The agent running the task went away", codes.Unavailable, http.StatusBadGateway},
	{CodeNoAgent, "NO_AGENT", "No agent offers the operator", codes.Unavailable, http.StatusServiceUnavailable},
	{CodeRetrieval, "RETRIEVAL_FAILED", "Retrieval failed", codes.Aborted, http.StatusBadGateway},
	{CodeMemory, "MEMORY_FAILED", "Memory operation failed", codes.Aborted, http.StatusBadGateway},
	{CodeAuthorization, "AUTHORIZATION_FAILED", "Not authorized", codes.PermissionDenied, http.StatusForbidden},
	{CodeAuthentication, "AUTHENTICATION_FAILED", "Authentication failed", codes.Unauthenticated, http.StatusUnauthorized},
	{CodeInsufficientScope, "INSUFFICIENT_SCOPE", "Insufficient scope", codes.PermissionDenied, http.StatusForbidden},
	{CodeApprovalDenied, "APPROVAL_DENIED", "Approval denied or expired", codes.PermissionDenied, http.StatusForbidden},
	{CodeApprovalPending, "APPROVAL_PENDING", "Approval pending", codes.PermissionDenied, http.StatusAccepted},
	{CodeQuota, "QUOTA_EXCEEDED", "Quota exceeded", codes.ResourceExhausted, http.StatusTooManyRequests},
	{CodeRateLimited, "RATE_LIMITED", "Rate limit exceeded", codes.ResourceExhausted, http.StatusTooManyRequests},
	{CodeOverloaded, "OVERLOADED", "Server overloaded", codes.ResourceExhausted, http.StatusServiceUnavailable},
	{CodeBudgetExhausted, "BUDGET_EXHAUSTED", "Token budget exhausted", codes.ResourceExhausted, http.StatusTooManyRequests},
}

// ranges gives the kind a code falls back to when it is not in the table itself: a backend
// may send any code of an application range.
var ranges = []struct {
	lo, hi   Code
	fallback Code
}{
	{-32099, -32000, CodeInternal},
	{1000, 1999, CodeAgentExecution},
	{2000, 2999, CodeRetrieval},
	{3000, 3999, CodeMemory},
	{4000, 4999, CodeAuthorization},
	{5000, 5999, CodeQuota},
}

var byCode = func() map[Code]Kind {
	m := make(map[Code]Kind, len(table))
	for _, k := range table {
		m[k.Code] = k
	}
	return m
}()

// Kinds returns a copy of the whole error table, in table order.
func Kinds() []Kind { return append([]Kind(nil), table...) }

// Lookup returns the kind for code. A code of a known range that is not in the table takes
// the range's kind with its own code kept; any other code is reported as not found.
func Lookup(code Code) (Kind, bool) {
	if k, ok := byCode[code]; ok {
		return k, true
	}
	for _, r := range ranges {
		if code >= r.lo && code <= r.hi {
			k := byCode[r.fallback]
			k.Code = code
			return k, true
		}
	}
	return Kind{}, false
}

// KindOf is Lookup with unknown codes mapped to the internal-error kind (keeping the code).
func KindOf(code Code) Kind {
	if k, ok := Lookup(code); ok {
		return k
	}
	k := byCode[CodeInternal]
	k.Code = code
	return k
}

// fromGRPC maps a gRPC status code received from a backend to the JSON-RPC code reported to
// the caller.
var fromGRPC = map[codes.Code]Code{
	codes.Canceled:           CodeCancelled,
	codes.Unknown:            CodeInternal,
	codes.InvalidArgument:    CodeInvalidParams,
	codes.DeadlineExceeded:   CodeDeadlineExceeded,
	codes.NotFound:           CodeAgentExecution,
	codes.AlreadyExists:      CodeAgentExecution,
	codes.PermissionDenied:   CodeInsufficientScope,
	codes.ResourceExhausted:  CodeRateLimited,
	codes.FailedPrecondition: CodeAgentExecution,
	codes.Aborted:            CodeAgentExecution,
	codes.OutOfRange:         CodeInvalidParams,
	codes.Unimplemented:      CodeMethodNotFound,
	codes.Internal:           CodeInternal,
	codes.Unavailable:        CodeUnavailable,
	codes.DataLoss:           CodeInternal,
	codes.Unauthenticated:    CodeAuthentication,
}

// FromGRPC returns the JSON-RPC code for a gRPC status code; OK has no error code and
// yields CodeInternal, as does any code gRPC may add later.
func FromGRPC(c codes.Code) Code {
	if code, ok := fromGRPC[c]; ok {
		return code
	}
	return CodeInternal
}
