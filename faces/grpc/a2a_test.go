package grpcface

import (
	"strconv"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestA2AStatus: the binding's errors become the statuses of the specification's table
// (§5.4), the gateway's own errors those of the error table, each with an ErrorInfo of
// the error's reason and domain, the JSON-RPC code and the trace id, and a BadRequest when
// a field is at fault.
func TestA2AStatus(t *testing.T) {
	tests := []struct {
		name   string
		err    *a2a.Error
		code   codes.Code
		reason string
		domain string
		field  string
	}{
		{"task not found", a2a.TaskNotFound("t1"), codes.NotFound, "TASK_NOT_FOUND", "a2a-protocol.org", ""},
		{"not cancelable", a2a.TaskNotCancelable("t1"), codes.FailedPrecondition, "TASK_NOT_CANCELABLE", "a2a-protocol.org", ""},
		{"unsupported", a2a.UnsupportedOperation("no"), codes.FailedPrecondition, "UNSUPPORTED_OPERATION", "a2a-protocol.org", ""},
		{"push not supported", a2a.PushNotificationNotSupported(), codes.FailedPrecondition, "PUSH_NOTIFICATION_NOT_SUPPORTED", "a2a-protocol.org", ""},
		{"invalid params", a2a.InvalidParams("message.parts", "must not be empty"), codes.InvalidArgument, "INVALID_PARAMS", "a2a-protocol.org", "message.parts"},
		{"content type", a2a.Errf(a2a.CodeContentTypeNotSupported, "x"), codes.InvalidArgument, "CONTENT_TYPE_NOT_SUPPORTED", "a2a-protocol.org", ""},
		{"version", a2a.Errf(a2a.CodeVersionNotSupported, "x"), codes.FailedPrecondition, "VERSION_NOT_SUPPORTED", "a2a-protocol.org", ""},
		{"method not found", a2a.Errf(a2a.CodeMethodNotFound, "off"), codes.Unimplemented, "METHOD_NOT_FOUND", "a2a-protocol.org", ""},
		{"internal", a2a.Errf(a2a.CodeInternal, "Internal error"), codes.Internal, "INTERNAL_ERROR", "a2a-protocol.org", ""},
		{"gateway: a NEKTE task failed (-32007, as ExtendedCardNotConfigured)", func() *a2a.Error {
			e := a2a.Errf(schemas.CodeTaskFailed, "Task failed").Info(schemas.KindOf(schemas.CodeTaskFailed).Name)
			e.Domain = "gatehouse"
			return e
		}(), schemas.KindOf(schemas.CodeTaskFailed).GRPC, schemas.KindOf(schemas.CodeTaskFailed).Name, "gatehouse", ""},
		{"gateway: insufficient scope", a2a.Errf(schemas.CodeInsufficientScope, "scope"), schemas.KindOf(schemas.CodeInsufficientScope).GRPC, schemas.KindOf(schemas.CodeInsufficientScope).Name, "gatehouse", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := status.Convert(a2aStatus(tt.err, "trace-1"))
			if st.Code() != tt.code || st.Message() != tt.err.Message {
				t.Fatalf("status %v %q, want %v %q", st.Code(), st.Message(), tt.code, tt.err.Message)
			}
			var info *errdetails.ErrorInfo
			var bad *errdetails.BadRequest
			for _, d := range st.Details() {
				switch d := d.(type) {
				case *errdetails.ErrorInfo:
					info = d
				case *errdetails.BadRequest:
					bad = d
				}
			}
			if info == nil || info.GetReason() != tt.reason || info.GetDomain() != tt.domain ||
				info.GetMetadata()["trace_id"] != "trace-1" || info.GetMetadata()["jsonrpc_code"] != strconv.Itoa(int(tt.err.Code)) {
				t.Errorf("ErrorInfo %v, want reason %s, domain %s", info, tt.reason, tt.domain)
			}
			if got := bad.GetFieldViolations(); (tt.field == "") != (len(got) == 0) || (tt.field != "" && got[0].GetField() != tt.field) {
				t.Errorf("BadRequest %v, want field %q", bad, tt.field)
			}
		})
	}
}
