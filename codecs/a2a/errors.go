package a2a

import (
	"encoding/json"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// The binding's error codes (specification §5.4), beside JSON-RPC's own.
const (
	CodeParseError                 schemas.Code = -32700
	CodeInvalidRequest             schemas.Code = -32600
	CodeMethodNotFound             schemas.Code = -32601
	CodeInvalidParams              schemas.Code = -32602
	CodeInternal                   schemas.Code = -32603
	CodeTaskNotFound               schemas.Code = -32001
	CodeTaskNotCancelable          schemas.Code = -32002
	CodePushNotificationNotSupport schemas.Code = -32003
	CodeUnsupportedOperation       schemas.Code = -32004
	CodeContentTypeNotSupported    schemas.Code = -32005
	CodeInvalidAgentResponse       schemas.Code = -32006
	CodeExtendedCardNotConfigured  schemas.Code = -32007
	CodeExtensionSupportRequired   schemas.Code = -32008
	CodeVersionNotSupported        schemas.Code = -32009
	errorDomain                                 = "a2a-protocol.org"
	errorInfoType                               = "type.googleapis.com/google.rpc.ErrorInfo"
	badRequestType                              = "type.googleapis.com/google.rpc.BadRequest"
	gatewayDomain                               = "gatehouse"
	maxDetailFields                             = 8
)

// Error is an error of the binding: a code, a message that never repeats input, and the
// details of error.data (google.rpc.ErrorInfo, google.rpc.BadRequest).
type Error struct {
	Code    schemas.Code
	Message string
	// Reason and Domain name the error for ErrorInfo (domain a2a-protocol.org for the
	// binding's errors); Metadata are its string details.
	Reason   string
	Domain   string
	Metadata map[string]string
	// Field and Violation describe the params member at fault, for BadRequest.
	Field, Violation string
}

// Errf returns an error of code with a formatted message.
func Errf(code schemas.Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error implements error.
func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s (%s: %s)", e.Message, e.Field, e.Violation)
	}
	return e.Message
}

// Info sets the ErrorInfo reason (domain a2a-protocol.org) and metadata given as key,
// value pairs.
func (e *Error) Info(reason string, kv ...string) *Error {
	e.Reason, e.Domain = reason, errorDomain
	for i := 0; i+1 < len(kv) && len(e.Metadata) < maxDetailFields; i += 2 {
		if e.Metadata == nil {
			e.Metadata = make(map[string]string, len(kv)/2)
		}
		e.Metadata[kv[i]] = kv[i+1]
	}
	return e
}

// At names the params member at fault and why, for BadRequest.
func (e *Error) At(field, violation string) *Error {
	e.Field, e.Violation = field, violation
	return e
}

// TaskNotFound is the error of a task that does not exist or is not the caller's.
func TaskNotFound(id string) *Error {
	return Errf(CodeTaskNotFound, "Task not found").Info("TASK_NOT_FOUND", "taskId", clip(id))
}

// TaskNotCancelable is the error of a cancel of a task in a terminal state.
func TaskNotCancelable(id string) *Error {
	return Errf(CodeTaskNotCancelable, "Task cannot be canceled").Info("TASK_NOT_CANCELABLE", "taskId", clip(id))
}

// UnsupportedOperation is the error of an operation the agent does not do.
func UnsupportedOperation(why string) *Error {
	return Errf(CodeUnsupportedOperation, "%s", why).Info("UNSUPPORTED_OPERATION")
}

// PushNotificationNotSupported is the error of a push-notification config operation on an
// agent whose card says pushNotifications false.
func PushNotificationNotSupported() *Error {
	return Errf(CodePushNotificationNotSupport, "Push Notification is not supported").Info("PUSH_NOTIFICATION_NOT_SUPPORTED")
}

// InvalidParams is the error of params that break the contract at field.
func InvalidParams(field, violation string) *Error {
	return Errf(CodeInvalidParams, "Invalid parameters").At(field, violation)
}

// clip bounds a value echoed in error metadata (an id the caller sent).
func clip(s string) string {
	const maxEcho = 128
	if len(s) > maxEcho {
		return s[:maxEcho]
	}
	return s
}

// AppendError appends the JSON-RPC error response of e to dst, with traceID in an
// ErrorInfo detail of domain gatehouse (the house's trace_id).
func AppendError(dst []byte, id jsonrpc.ID, e *Error, traceID string) []byte {
	return jsonrpc.AppendError(dst, id, e.Code, e.Message, e.data(traceID))
}

type errorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

type fieldViolation struct {
	Field       string `json:"field"`
	Description string `json:"description"`
}

type badRequest struct {
	Type            string           `json:"@type"`
	FieldViolations []fieldViolation `json:"fieldViolations"`
}

// data returns error.data: an array of detail objects.
func (e *Error) data(traceID string) []byte {
	var details []any
	if e.Reason != "" {
		details = append(details, errorInfo{Type: errorInfoType, Reason: e.Reason, Domain: e.Domain, Metadata: e.Metadata})
	}
	if e.Field != "" || e.Violation != "" {
		details = append(details, badRequest{Type: badRequestType, FieldViolations: []fieldViolation{{Field: e.Field, Description: e.Violation}}})
	}
	if traceID != "" {
		details = append(details, errorInfo{Type: errorInfoType, Reason: "TRACE", Domain: gatewayDomain, Metadata: map[string]string{"trace_id": traceID}})
	}
	if len(details) == 0 {
		return nil
	}
	b, err := json.Marshal(details)
	if err != nil {
		return nil // the detail types hold strings only
	}
	return b
}
