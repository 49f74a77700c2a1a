package grpcface

import (
	"context"
	"maps"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	a2av1 "github.com/gatehouse-dev/gatehouse/schemas/gen/lf/a2a/v1"
)

// A2A is the A2A face as its gRPC binding reaches it (the server hands the face's
// a2aface.Face): Operate runs one operation, its request and result in the JSON of the
// JSON-RPC binding, as the caller ex names; a streaming operation hands each stream result
// to event. See a2aface.Face.Operate.
type A2A interface {
	Operate(ctx context.Context, ex faces.Exchange, method string, params []byte, event func(result []byte) bool) ([]byte, *a2a.Error)
}

// a2aGRPC is lf.a2a.v1.A2AService, the A2A v1.0 gRPC binding, on the internal listener.
// Each RPC authenticates its caller from the metadata (zone internal, protocol grpc, the
// gRPC deadline), turns the request into the JSON-RPC binding's params (protojson: the
// specification gives both bindings the same JSON names) and runs the operation of the
// same name on the A2A face, which checks it with the same decoder and limits, binds tasks
// to the same principal and runs them as the same NEKTE tasks; the result comes back the
// same way. Errors are statuses per the specification's table (§5.4), with ErrorInfo and
// BadRequest details (a2aStatus).
type a2aGRPC struct {
	a2av1.UnimplementedA2AServiceServer
	gw  Gateway
	a2a A2A
}

var _ a2av1.A2AServiceServer = (*a2aGRPC)(nil)

// gatewayDomain is the ErrorInfo domain of the gateway's own errors.
const gatewayDomain = "gatehouse"

// errA2AResult reports a result the face gave that the gRPC response cannot hold.
var errA2AResult = a2a.Errf(a2a.CodeInternal, "Internal error")

// operate runs method with req as the caller of ctx: the result decoded into resp, or
// each stream result sent as a StreamResponse on stream.
func (s *a2aGRPC) operate(ctx context.Context, method string, req proto.Message, resp proto.Message, stream grpc.ServerStreamingServer[a2av1.StreamResponse]) error {
	rt := s.gw.Acquire()
	p := rt.Pipeline()
	principal, err := rt.Authenticator().Authenticate(ctx, credentials(ctx))
	rt.Release()
	ctx, span, traceID := p.Tracer.StartAsCaller(ctx, gateway.ProtocolGRPC, "", method)
	if span != nil {
		defer span.End()
	}
	if err != nil {
		return toStatus(gateway.AsError(err), traceID)
	}
	params, merr := protojson.Marshal(req)
	if merr != nil {
		return a2aStatus(a2a.Errf(a2a.CodeInvalidParams, "Invalid parameters"), traceID)
	}
	var callerMs int64
	if dl, ok := ctx.Deadline(); ok {
		callerMs = dl.UnixMilli()
	}
	ex := faces.Exchange{Principal: principal, Zone: gateway.ZoneInternal, Protocol: gateway.ProtocolGRPC,
		Deadline: p.Resolve(callerMs), CallerDeadline: callerMs > 0, TraceID: traceID, Span: span}
	var event func([]byte) bool
	var sendErr error
	if stream != nil {
		event = func(result []byte) bool {
			msg := &a2av1.StreamResponse{}
			if err := protojson.Unmarshal(result, msg); err != nil {
				sendErr = a2aStatus(errA2AResult, traceID)
				return false
			}
			if err := stream.Send(msg); err != nil {
				sendErr = err
				return false
			}
			return true
		}
	}
	result, aerr := s.a2a.Operate(ctx, ex, method, params, event)
	switch {
	case sendErr != nil:
		return sendErr
	case aerr != nil:
		return a2aStatus(aerr, traceID)
	case resp != nil:
		// The agent card's JSON also carries the 0.3 spellings for 0.3 clients (an
		// interface's transport, a security scheme's type ...), which the 1.0 message has
		// no field for: they are dropped. Every other result must read strictly.
		_, card := resp.(*a2av1.AgentCard)
		if err := (protojson.UnmarshalOptions{DiscardUnknown: card}).Unmarshal(result, resp); err != nil {
			return a2aStatus(errA2AResult, traceID)
		}
	}
	return nil
}

// SendMessage implements lf.a2a.v1.A2AService/SendMessage.
func (s *a2aGRPC) SendMessage(ctx context.Context, req *a2av1.SendMessageRequest) (*a2av1.SendMessageResponse, error) {
	resp := &a2av1.SendMessageResponse{}
	return resp, s.operate(ctx, "SendMessage", req, resp, nil)
}

// SendStreamingMessage implements lf.a2a.v1.A2AService/SendStreamingMessage.
func (s *a2aGRPC) SendStreamingMessage(req *a2av1.SendMessageRequest, stream grpc.ServerStreamingServer[a2av1.StreamResponse]) error {
	return s.operate(stream.Context(), "SendStreamingMessage", req, nil, stream)
}

// GetTask implements lf.a2a.v1.A2AService/GetTask.
func (s *a2aGRPC) GetTask(ctx context.Context, req *a2av1.GetTaskRequest) (*a2av1.Task, error) {
	resp := &a2av1.Task{}
	return resp, s.operate(ctx, "GetTask", req, resp, nil)
}

// ListTasks implements lf.a2a.v1.A2AService/ListTasks.
func (s *a2aGRPC) ListTasks(ctx context.Context, req *a2av1.ListTasksRequest) (*a2av1.ListTasksResponse, error) {
	resp := &a2av1.ListTasksResponse{}
	return resp, s.operate(ctx, "ListTasks", req, resp, nil)
}

// CancelTask implements lf.a2a.v1.A2AService/CancelTask.
func (s *a2aGRPC) CancelTask(ctx context.Context, req *a2av1.CancelTaskRequest) (*a2av1.Task, error) {
	resp := &a2av1.Task{}
	return resp, s.operate(ctx, "CancelTask", req, resp, nil)
}

// SubscribeToTask implements lf.a2a.v1.A2AService/SubscribeToTask.
func (s *a2aGRPC) SubscribeToTask(req *a2av1.SubscribeToTaskRequest, stream grpc.ServerStreamingServer[a2av1.StreamResponse]) error {
	return s.operate(stream.Context(), "SubscribeToTask", req, nil, stream)
}

// CreateTaskPushNotificationConfig implements lf.a2a.v1.A2AService/CreateTaskPushNotificationConfig.
func (s *a2aGRPC) CreateTaskPushNotificationConfig(ctx context.Context, req *a2av1.TaskPushNotificationConfig) (*a2av1.TaskPushNotificationConfig, error) {
	resp := &a2av1.TaskPushNotificationConfig{}
	return resp, s.operate(ctx, "CreateTaskPushNotificationConfig", req, resp, nil)
}

// GetTaskPushNotificationConfig implements lf.a2a.v1.A2AService/GetTaskPushNotificationConfig.
func (s *a2aGRPC) GetTaskPushNotificationConfig(ctx context.Context, req *a2av1.GetTaskPushNotificationConfigRequest) (*a2av1.TaskPushNotificationConfig, error) {
	resp := &a2av1.TaskPushNotificationConfig{}
	return resp, s.operate(ctx, "GetTaskPushNotificationConfig", req, resp, nil)
}

// ListTaskPushNotificationConfigs implements lf.a2a.v1.A2AService/ListTaskPushNotificationConfigs.
func (s *a2aGRPC) ListTaskPushNotificationConfigs(ctx context.Context, req *a2av1.ListTaskPushNotificationConfigsRequest) (*a2av1.ListTaskPushNotificationConfigsResponse, error) {
	resp := &a2av1.ListTaskPushNotificationConfigsResponse{}
	return resp, s.operate(ctx, "ListTaskPushNotificationConfigs", req, resp, nil)
}

// DeleteTaskPushNotificationConfig implements lf.a2a.v1.A2AService/DeleteTaskPushNotificationConfig.
func (s *a2aGRPC) DeleteTaskPushNotificationConfig(ctx context.Context, req *a2av1.DeleteTaskPushNotificationConfigRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, s.operate(ctx, "DeleteTaskPushNotificationConfig", req, nil, nil)
}

// GetExtendedAgentCard implements lf.a2a.v1.A2AService/GetExtendedAgentCard.
func (s *a2aGRPC) GetExtendedAgentCard(ctx context.Context, req *a2av1.GetExtendedAgentCardRequest) (*a2av1.AgentCard, error) {
	resp := &a2av1.AgentCard{}
	return resp, s.operate(ctx, "GetExtendedAgentCard", req, resp, nil)
}

// a2aCodes are the gRPC statuses of the binding's errors (specification §5.4); the other
// codes, and every error of domain gatehouse (the gateway's: authorization, rate limits,
// deadline, a NEKTE task that failed ...), follow the error table as on every other
// service of the face.
var a2aCodes = map[schemas.Code]struct {
	code   codes.Code
	reason string // the ErrorInfo reason of an error that names none
}{
	a2a.CodeParseError:                 {codes.InvalidArgument, "PARSE_ERROR"},
	a2a.CodeInvalidRequest:             {codes.InvalidArgument, "INVALID_REQUEST"},
	a2a.CodeMethodNotFound:             {codes.Unimplemented, "METHOD_NOT_FOUND"},
	a2a.CodeInvalidParams:              {codes.InvalidArgument, "INVALID_PARAMS"},
	a2a.CodeInternal:                   {codes.Internal, "INTERNAL_ERROR"},
	a2a.CodeTaskNotFound:               {codes.NotFound, "TASK_NOT_FOUND"},
	a2a.CodeTaskNotCancelable:          {codes.FailedPrecondition, "TASK_NOT_CANCELABLE"},
	a2a.CodePushNotificationNotSupport: {codes.FailedPrecondition, "PUSH_NOTIFICATION_NOT_SUPPORTED"},
	a2a.CodeUnsupportedOperation:       {codes.FailedPrecondition, "UNSUPPORTED_OPERATION"},
	a2a.CodeContentTypeNotSupported:    {codes.InvalidArgument, "CONTENT_TYPE_NOT_SUPPORTED"},
	a2a.CodeInvalidAgentResponse:       {codes.Internal, "INVALID_AGENT_RESPONSE"},
	a2a.CodeExtendedCardNotConfigured:  {codes.FailedPrecondition, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"},
	a2a.CodeExtensionSupportRequired:   {codes.FailedPrecondition, "EXTENSION_SUPPORT_REQUIRED"},
	a2a.CodeVersionNotSupported:        {codes.FailedPrecondition, "VERSION_NOT_SUPPORTED"},
}

// a2aStatus is the gRPC status of a binding error: the code from a2aCodes (or the error
// table), the message, an ErrorInfo with the reason, domain and metadata the JSON-RPC
// binding's error.data carries (plus the JSON-RPC code and the trace id), and a
// BadRequest naming the field at fault.
func a2aStatus(e *a2a.Error, traceID string) error {
	// The gateway's own errors (domain gatehouse) keep its codes, some of which (the
	// NEKTE ones, -32001 …) share numbers with the binding's: they follow the error table.
	m, ok := a2aCodes[e.Code]
	if e.Domain == gatewayDomain {
		ok = false
	}
	code := m.code
	if !ok {
		code = schemas.KindOf(e.Code).GRPC
	}
	st := status.New(code, e.Message)
	meta := make(map[string]string, len(e.Metadata)+2)
	maps.Copy(meta, e.Metadata)
	meta["jsonrpc_code"] = strconv.Itoa(int(e.Code))
	meta["trace_id"] = traceID
	reason, domain := e.Reason, e.Domain
	switch {
	case reason != "":
	case ok:
		reason, domain = m.reason, "a2a-protocol.org"
	default:
		reason, domain = schemas.KindOf(e.Code).Name, gatewayDomain
	}
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: reason, Domain: domain, Metadata: meta}}
	if e.Field != "" || e.Violation != "" {
		details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: e.Field, Description: e.Violation}}})
	}
	if with, err := st.WithDetails(details...); err == nil {
		st = with
	}
	return st.Err()
}
