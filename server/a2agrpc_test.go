package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gatehouse-dev/gatehouse/gateway"
	a2av1 "github.com/gatehouse-dev/gatehouse/schemas/gen/lf/a2a/v1"
)

// startA2AGRPC is startA2A with the internal gRPC listener on, and its A2A client.
func startA2AGRPC(t *testing.T, a2aKeys string) (*testServer, a2av1.A2AServiceClient) {
	t.Helper()
	cfg := fmt.Sprintf(a2aConfig, callerSecret, a2aSecond, a2aKeys)
	cfg = strings.Replace(cfg, "  admin: {addr: \"127.0.0.1:0\"}\n", "  admin: {addr: \"127.0.0.1:0\"}\n  internal: {addr: \"127.0.0.1:0\"}\n", 1)
	if strings.Contains(a2aKeys, "push:") { // push notifications are signed with the key ring
		cfg = strings.Replace(cfg, "auth:\n", "auth:\n  keyring: {issuer: gatehouse, algorithm: EdDSA}\n", 1)
	}
	ts := start(t, cfg, map[string]gateway.Target{"slow.wait": slowTarget{}})
	return ts, a2av1.NewA2AServiceClient(dialNekte(t, ts))
}

// as returns a context carrying tok as the bearer token, bounded by the test's wait.
func as(t *testing.T, tok string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
}

// grpcSend is a SendMessage request running skill on data.
func grpcSend(t *testing.T, skill string, data any, immediately bool) *a2av1.SendMessageRequest {
	t.Helper()
	v, err := structpb.NewValue(data)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := structpb.NewStruct(map[string]any{"skill": skill})
	return &a2av1.SendMessageRequest{
		Message: &a2av1.Message{MessageId: "m-" + skill, Role: a2av1.Role_ROLE_USER, Metadata: md,
			Parts: []*a2av1.Part{{Content: &a2av1.Part_Data{Data: v}}}},
		Configuration: &a2av1.SendMessageConfiguration{ReturnImmediately: immediately},
	}
}

// wantA2AStatus checks that err is a status of code with an ErrorInfo of reason (any
// reason when empty) carrying the JSON-RPC code.
func wantA2AStatus(t *testing.T, what string, err error, code codes.Code, reason string, jsonrpc int) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			if (reason != "" && info.GetReason() != reason) || info.GetMetadata()["jsonrpc_code"] != fmt.Sprint(jsonrpc) || info.GetMetadata()["trace_id"] == "" {
				t.Errorf("%s: ErrorInfo %v, want reason %s, jsonrpc_code %d and a trace id", what, info, reason, jsonrpc)
			}
			return
		}
	}
	t.Errorf("%s: %v has no ErrorInfo", what, st.Details())
}

// TestA2AGRPCSendGetList: the gRPC binding runs a message as the JSON-RPC binding does —
// a completed task with the result as its artifact — and the task is the caller's over
// both bindings: GetTask and ListTasks see it, another principal does not.
func TestA2AGRPCSendGetList(t *testing.T) {
	ts, c := startA2AGRPC(t, "")
	alice := callerToken(t, "alice", "agents", "caps")
	resp, err := c.SendMessage(as(t, alice), grpcSend(t, "subtract", map[string]any{"minuend": 42, "subtrahend": 23}, false))
	if err != nil {
		t.Fatal(err)
	}
	task := resp.GetTask()
	if task.GetStatus().GetState() != a2av1.TaskState_TASK_STATE_COMPLETED || len(task.GetArtifacts()) != 1 ||
		task.GetArtifacts()[0].GetParts()[0].GetData().GetNumberValue() != 19 || !strings.HasPrefix(task.GetId(), "a2a-") {
		t.Fatalf("SendMessage = %v", resp)
	}
	got, err := c.GetTask(as(t, alice), &a2av1.GetTaskRequest{Id: task.GetId()})
	if err != nil || got.GetId() != task.GetId() || got.GetStatus().GetState() != a2av1.TaskState_TASK_STATE_COMPLETED ||
		got.GetArtifacts()[0].GetParts()[0].GetData().GetNumberValue() != 19 {
		t.Fatalf("GetTask = %v, %v", got, err)
	}
	// The JSON-RPC binding sees the task the gRPC binding created, as the same caller.
	_, _, body := ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+task.GetId()+`"}}`)
	var viaHTTP a2aTask
	a2aResult(t, body, &viaHTTP)
	if viaHTTP.ID != task.GetId() || viaHTTP.Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("GetTask over JSON-RPC = %s", body)
	}
	if _, err := c.SendMessage(as(t, alice), grpcSend(t, "sum", []any{1, 2, 3}, false)); err != nil {
		t.Fatal(err)
	}
	page := int32(1)
	list, err := c.ListTasks(as(t, alice), &a2av1.ListTasksRequest{PageSize: &page})
	if err != nil || list.GetTotalSize() != 2 || len(list.GetTasks()) != 1 || list.GetNextPageToken() == "" {
		t.Fatalf("ListTasks = %v, %v", list, err)
	}
	list, err = c.ListTasks(as(t, alice), &a2av1.ListTasksRequest{PageSize: &page, PageToken: list.GetNextPageToken()})
	if err != nil || len(list.GetTasks()) != 1 || list.GetTasks()[0].GetId() != task.GetId() || list.GetNextPageToken() != "" {
		t.Fatalf("ListTasks page 2 = %v, %v", list, err)
	}
	bob := callerToken(t, "bob", "agents", "caps")
	list, err = c.ListTasks(as(t, bob), &a2av1.ListTasksRequest{})
	if err != nil || list.GetTotalSize() != 0 || len(list.GetTasks()) != 0 {
		t.Errorf("bob lists alice's tasks: %v, %v", list, err)
	}
	_, err = c.GetTask(as(t, bob), &a2av1.GetTaskRequest{Id: task.GetId()})
	wantA2AStatus(t, "bob's GetTask of alice's task", err, codes.NotFound, "TASK_NOT_FOUND", -32001)
}

// TestA2AGRPCCancelSubscribe: CancelTask and SubscribeToTask over gRPC, bound to the
// principal (another's gets NOT_FOUND), with the specification's statuses for a task
// that cannot be canceled (FAILED_PRECONDITION) or followed any more.
func TestA2AGRPCCancelSubscribe(t *testing.T) {
	_, c := startA2AGRPC(t, "")
	alice := callerToken(t, "alice", "agents", "caps")
	resp, err := c.SendMessage(as(t, alice), grpcSend(t, "slow", map[string]any{}, true))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetTask().GetId()
	if resp.GetTask().GetStatus().GetState() != a2av1.TaskState_TASK_STATE_SUBMITTED {
		t.Fatalf("returnImmediately: %v", resp)
	}
	for name, tok := range map[string]string{
		"another subject":             callerToken(t, "bob", "agents", "caps"),
		"the same subject, elsewhere": secondToken(t, "alice", "agents", "caps"),
	} {
		_, err := c.CancelTask(as(t, tok), &a2av1.CancelTaskRequest{Id: id})
		wantA2AStatus(t, name+": CancelTask", err, codes.NotFound, "TASK_NOT_FOUND", -32001)
		sub, err := c.SubscribeToTask(as(t, tok), &a2av1.SubscribeToTaskRequest{Id: id})
		if err == nil {
			_, err = sub.Recv()
		}
		wantA2AStatus(t, name+": SubscribeToTask", err, codes.NotFound, "TASK_NOT_FOUND", -32001)
	}
	// alice follows the task until it is canceled.
	waitFor(t, func() bool {
		got, err := c.GetTask(as(t, alice), &a2av1.GetTaskRequest{Id: id})
		return err == nil && got.GetStatus().GetState() == a2av1.TaskState_TASK_STATE_WORKING
	})
	sub, err := c.SubscribeToTask(as(t, alice), &a2av1.SubscribeToTaskRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	first, err := sub.Recv()
	if err != nil || first.GetTask().GetId() != id {
		t.Fatalf("first event %v, %v, want the task", first, err)
	}
	canceled, err := c.CancelTask(as(t, alice), &a2av1.CancelTaskRequest{Id: id})
	if err != nil || canceled.GetStatus().GetState() != a2av1.TaskState_TASK_STATE_CANCELED {
		t.Fatalf("CancelTask = %v, %v", canceled, err)
	}
	evs := recvAll(t, sub)
	if len(evs) == 0 || evs[len(evs)-1].GetStatusUpdate().GetStatus().GetState() != a2av1.TaskState_TASK_STATE_CANCELED {
		t.Errorf("subscription events after the cancel = %v, want the canceled status last", evs)
	}
	_, err = c.CancelTask(as(t, alice), &a2av1.CancelTaskRequest{Id: id})
	wantA2AStatus(t, "cancelling a canceled task", err, codes.FailedPrecondition, "TASK_NOT_CANCELABLE", -32002)
	sub, err = c.SubscribeToTask(as(t, alice), &a2av1.SubscribeToTaskRequest{Id: id})
	if err == nil {
		_, err = sub.Recv()
	}
	wantA2AStatus(t, "subscribing to an ended task", err, codes.FailedPrecondition, "UNSUPPORTED_OPERATION", -32004)
}

// recvAll reads a stream to its end (io.EOF); any other error fails the test.
func recvAll(t *testing.T, s grpc.ServerStreamingClient[a2av1.StreamResponse]) []*a2av1.StreamResponse {
	t.Helper()
	var out []*a2av1.StreamResponse
	for {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, ev)
	}
}

// TestA2AGRPCStreaming: SendStreamingMessage is a server stream of StreamResponse — the
// submitted task first, the result artifact, the completed status last.
func TestA2AGRPCStreaming(t *testing.T) {
	_, c := startA2AGRPC(t, "")
	s, err := c.SendStreamingMessage(as(t, callerToken(t, "alice", "agents", "caps")),
		grpcSend(t, "subtract", map[string]any{"minuend": 5, "subtrahend": 7}, false))
	if err != nil {
		t.Fatal(err)
	}
	evs := recvAll(t, s)
	if len(evs) < 3 {
		t.Fatalf("events = %v", evs)
	}
	id := evs[0].GetTask().GetId()
	if id == "" || evs[0].GetTask().GetStatus().GetState() != a2av1.TaskState_TASK_STATE_SUBMITTED {
		t.Errorf("first event %v, want the submitted task", evs[0])
	}
	last := evs[len(evs)-1].GetStatusUpdate()
	if last.GetTaskId() != id || last.GetStatus().GetState() != a2av1.TaskState_TASK_STATE_COMPLETED {
		t.Errorf("last event %v, want the completed status update", evs[len(evs)-1])
	}
	var artifact bool
	for _, ev := range evs {
		if u := ev.GetArtifactUpdate(); u != nil && u.GetTaskId() == id && u.GetArtifact().GetParts()[0].GetData().GetNumberValue() == -2 {
			artifact = true
		}
	}
	if !artifact {
		t.Errorf("events %v carry no result artifact", evs)
	}
}

// TestA2AGRPCErrors: bad input is INVALID_ARGUMENT with the field at fault, a missing
// credential UNAUTHENTICATED, the extended card is the caller's, and a2a.grpc: false turns
// the binding off.
func TestA2AGRPCErrors(t *testing.T) {
	_, c := startA2AGRPC(t, "")
	alice := callerToken(t, "alice", "agents", "caps")
	tests := []struct {
		name   string
		req    *a2av1.SendMessageRequest
		code   codes.Code
		rpc    int
		reason string
	}{
		{"no parts", &a2av1.SendMessageRequest{Message: &a2av1.Message{MessageId: "m", Role: a2av1.Role_ROLE_USER}}, codes.InvalidArgument, -32602, ""},
		{"no message", &a2av1.SendMessageRequest{}, codes.InvalidArgument, -32602, ""},
		{"unknown skill", grpcSend(t, "nope", map[string]any{}, false), codes.InvalidArgument, -32602, ""},
		{"files only", func() *a2av1.SendMessageRequest {
			r := grpcSend(t, "subtract", nil, false)
			r.Message.Parts = []*a2av1.Part{{Content: &a2av1.Part_Url{Url: "https://x/y.png"}}}
			return r
		}(), codes.InvalidArgument, -32005, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.SendMessage(as(t, alice), tt.req)
			wantA2AStatus(t, tt.name, err, tt.code, tt.reason, tt.rpc)
		})
	}
	_, err := c.GetTask(as(t, alice), &a2av1.GetTaskRequest{Id: ""})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("GetTask without an id: %v, want INVALID_ARGUMENT", err)
	}
	_, err = c.GetTask(context.Background(), &a2av1.GetTaskRequest{Id: "a2a-x"})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("GetTask without credentials: %v, want UNAUTHENTICATED", err)
	}
	card, err := c.GetExtendedAgentCard(as(t, alice), &a2av1.GetExtendedAgentCardRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var skills []string
	for _, s := range card.GetSkills() {
		skills = append(skills, s.GetId())
	}
	if got := strings.Join(skills, ","); !strings.Contains(got, "subtract") || !strings.Contains(got, "slow") {
		t.Errorf("alice's extended card skills over gRPC = %s", got)
	}

	_, off := startA2AGRPC(t, "grpc: false")
	_, err = off.GetTask(as(t, alice), &a2av1.GetTaskRequest{Id: "a2a-x"})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("a2a.grpc: false: %v, want UNIMPLEMENTED", err)
	}
}

// TestA2AGRPCJSONNames: the protojson of the gRPC messages is the JSON of the JSON-RPC
// binding (the specification gives both the same names), which the gRPC binding relies
// on: a JSON-RPC SendMessage's params and result read as the proto messages losslessly.
func TestA2AGRPCJSONNames(t *testing.T) {
	ts := startA2A(t, "")
	params := `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"data":{"minuend":3,"subtrahend":1}}],"metadata":{"skill":"subtract"}},"configuration":{"historyLength":2}}`
	var req a2av1.SendMessageRequest
	if err := protojson.Unmarshal([]byte(params), &req); err != nil {
		t.Fatalf("the JSON-RPC params do not read as SendMessageRequest: %v", err)
	}
	_, _, body := ts.a2aPost(callerToken(t, "alice", "agents", "caps"), "1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":`+params+`}`)
	var result json.RawMessage
	a2aResult(t, body, &result)
	var resp a2av1.SendMessageResponse
	if err := protojson.Unmarshal(result, &resp); err != nil {
		t.Fatalf("the JSON-RPC result %s does not read as SendMessageResponse: %v", result, err)
	}
	if resp.GetTask().GetStatus().GetState() != a2av1.TaskState_TASK_STATE_COMPLETED || len(resp.GetTask().GetHistory()) != 1 {
		t.Errorf("SendMessageResponse = %v", &resp)
	}
}

// TestA2AGRPCPushConfigs: the push-notification config operations over gRPC — create, get,
// list, delete on the caller's task, NOT_FOUND for another principal and for a deleted
// config, a refused URL INVALID_ARGUMENT, and FAILED_PRECONDITION where push is off.
func TestA2AGRPCPushConfigs(t *testing.T) {
	_, c := startA2AGRPC(t, pushKeys)
	alice := callerToken(t, "alice", "agents", "caps")
	resp, err := c.SendMessage(as(t, alice), grpcSend(t, "slow", map[string]any{}, true))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetTask().GetId()
	hook := "http://127.0.0.1:9/hook"
	created, err := c.CreateTaskPushNotificationConfig(as(t, alice), &a2av1.TaskPushNotificationConfig{TaskId: id, Id: "c1", Url: hook, Token: "t"})
	if err != nil || created.GetId() != "c1" || created.GetTaskId() != id || created.GetUrl() != hook {
		t.Fatalf("CreateTaskPushNotificationConfig = %v, %v", created, err)
	}
	got, err := c.GetTaskPushNotificationConfig(as(t, alice), &a2av1.GetTaskPushNotificationConfigRequest{TaskId: id, Id: "c1"})
	if err != nil || got.GetUrl() != hook {
		t.Fatalf("GetTaskPushNotificationConfig = %v, %v", got, err)
	}
	list, err := c.ListTaskPushNotificationConfigs(as(t, alice), &a2av1.ListTaskPushNotificationConfigsRequest{TaskId: id})
	if err != nil || len(list.GetConfigs()) != 1 || list.GetConfigs()[0].GetId() != "c1" {
		t.Fatalf("ListTaskPushNotificationConfigs = %v, %v", list, err)
	}
	bob := callerToken(t, "bob", "agents", "caps")
	_, err = c.GetTaskPushNotificationConfig(as(t, bob), &a2av1.GetTaskPushNotificationConfigRequest{TaskId: id, Id: "c1"})
	wantA2AStatus(t, "bob's GetTaskPushNotificationConfig", err, codes.NotFound, "TASK_NOT_FOUND", -32001)
	_, err = c.CreateTaskPushNotificationConfig(as(t, alice), &a2av1.TaskPushNotificationConfig{TaskId: id, Url: "http://10.1.2.3/hook"})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("a push URL outside the allowlist: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := c.DeleteTaskPushNotificationConfig(as(t, alice), &a2av1.DeleteTaskPushNotificationConfigRequest{TaskId: id, Id: "c1"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetTaskPushNotificationConfig(as(t, alice), &a2av1.GetTaskPushNotificationConfigRequest{TaskId: id, Id: "c1"})
	wantA2AStatus(t, "GetTaskPushNotificationConfig of a deleted config", err, codes.NotFound, "TASK_NOT_FOUND", -32001)
	if _, err := c.CancelTask(as(t, alice), &a2av1.CancelTaskRequest{Id: id}); err != nil {
		t.Fatal(err)
	}

	_, off := startA2AGRPC(t, "")
	_, err = off.CreateTaskPushNotificationConfig(as(t, alice), &a2av1.TaskPushNotificationConfig{TaskId: id, Url: hook})
	wantA2AStatus(t, "push off", err, codes.FailedPrecondition, "PUSH_NOTIFICATION_NOT_SUPPORTED", -32003)
}
