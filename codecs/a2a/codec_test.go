package a2a_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
)

func TestDecodeRequest(t *testing.T) {
	const msg10 = `{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}`
	const msg03 = `{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}`
	tests := []struct {
		name string
		v    a2a.Version
		body string
		op   a2a.Op
		code int // 0: decodes
	}{
		{"send 1.0", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + msg10 + `}}`, a2a.OpSendMessage, 0},
		{"stream 1.0", a2a.V10, `{"jsonrpc":"2.0","id":"a","method":"SendStreamingMessage","params":{"message":` + msg10 + `}}`, a2a.OpSendStreamingMessage, 0},
		{"send 0.3", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":` + msg03 + `}}`, a2a.OpSendMessage, 0},
		{"get 1.0", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t1","historyLength":2}}`, a2a.OpGetTask, 0},
		{"resubscribe 0.3", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":"t1"}}`, a2a.OpSubscribeToTask, 0},
		{"list 1.0 state", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"status":"TASK_STATE_WORKING","pageSize":5}}`, a2a.OpListTasks, 0},
		{"list 1.0 wrong state spelling", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"status":"working"}}`, a2a.OpListTasks, -32602},
		{"0.3 name under 1.0", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, a2a.OpUnknown, -32601},
		{"1.0 name under 0.3", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`, a2a.OpUnknown, -32601},
		{"1.0 role under 0.3", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":` + msg10 + `}}`, a2a.OpSendMessage, -32602},
		{"0.3 role under 1.0", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + msg03 + `}}`, a2a.OpSendMessage, -32602},
		{"duplicate member", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"a","id":"b"}}`, a2a.OpUnknown, -32600},
		{"case-folded member", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"ID":"a"}}`, a2a.OpGetTask, -32602},
		{"case-folded nested", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","MessageID":"x","role":"ROLE_USER","parts":[{"text":"x"}]}}}`, a2a.OpSendMessage, -32602},
		{"missing id param", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{}}`, a2a.OpCancelTask, -32602},
		{"two kinds in a part", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x","url":"http://a"}]}}}`, a2a.OpSendMessage, -32602},
		{"no parts", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}`, a2a.OpSendMessage, -32602},
		{"wrong type", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":7}}`, a2a.OpGetTask, -32602},
		{"notification", a2a.V10, `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"a"}}`, a2a.OpUnknown, -32600},
		{"batch", a2a.V10, `[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"a"}}]`, a2a.OpUnknown, -32600},
		{"not JSON", a2a.V10, `{"jsonrpc":`, a2a.OpUnknown, -32700},
		{"too deep", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"metadata":` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40) + `,"id":"a"}}`, a2a.OpUnknown, -32600},
		{"too large", a2a.V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"` + strings.Repeat("a", 300<<10) + `"}}`, a2a.OpUnknown, -32600},
		{"0.3 file part", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"name":"a.txt","mimeType":"text/plain","bytes":"aGk="}}]}}}`, a2a.OpSendMessage, 0},
		{"0.3 unknown kind", a2a.V03, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"video"}]}}}`, a2a.OpSendMessage, -32602},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _, err := a2a.DecodeRequest([]byte(tt.body), tt.v, a2a.DefaultLimits)
			if tt.code == 0 {
				if err != nil {
					t.Fatalf("DecodeRequest: %v", err)
				}
				if req.Op != tt.op {
					t.Errorf("op = %d, want %d", req.Op, tt.op)
				}
				return
			}
			if err == nil {
				t.Fatalf("DecodeRequest succeeded, want code %d", tt.code)
			}
			if int(err.Code) != tt.code {
				t.Errorf("code = %d (%v), want %d", err.Code, err, tt.code)
			}
		})
	}
}

func TestDecodeNormalizesV03(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"},{"kind":"data","data":{"a":1}},{"kind":"file","file":{"uri":"https://x/y","mimeType":"image/png"}}]},"configuration":{"blocking":false}}}`
	req, _, err := a2a.DecodeRequest([]byte(body), a2a.V03, a2a.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	m := req.Send.Message
	if m.Role != a2a.RoleUser || m.Kind != "" {
		t.Errorf("role %q kind %q, want ROLE_USER and none", m.Role, m.Kind)
	}
	if m.Parts[0].Text == nil || *m.Parts[0].Text != "hi" || string(m.Parts[1].Data) != `{"a":1}` || m.Parts[2].URL != "https://x/y" || m.Parts[2].MediaType != "image/png" {
		t.Errorf("parts = %+v", m.Parts)
	}
	if !req.Send.Configuration.Immediate() {
		t.Error("blocking false is not read as an immediate answer")
	}
}

func TestParseVersion(t *testing.T) {
	for h, want := range map[string]string{"": "0.3", "0.3": "0.3", "1.0": "1.0", "1": "1.0", "1.0.1": "1.0"} {
		v, err := a2a.ParseVersion(h)
		if err != nil || v.String() != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %s", h, v, err, want)
		}
	}
	for _, h := range []string{"0.2", "2.0", "1.1", "x"} {
		if _, err := a2a.ParseVersion(h); err == nil || err.Code != a2a.CodeVersionNotSupported {
			t.Errorf("ParseVersion(%q) = %v, want VersionNotSupported", h, err)
		}
	}
}

func TestMarshalVersions(t *testing.T) {
	text := "done"
	task := a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateCompleted},
		Artifacts: []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart(text)}}},
		History:   []a2a.Message{{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}}}
	tests := []struct {
		name string
		got  func() ([]byte, error)
		want string
	}{
		{"send 1.0", func() ([]byte, error) { return a2a.MarshalSendResult(task, a2a.V10) },
			`{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"done"}]}],"history":[{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}]}}`},
		{"send 0.3", func() ([]byte, error) { return a2a.MarshalSendResult(task, a2a.V03) },
			`{"id":"t","contextId":"c","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[{"text":"done","kind":"text"}]}],"history":[{"messageId":"m","role":"user","parts":[{"text":"hi","kind":"text"}],"kind":"message"}],"kind":"task"}`},
		{"status 1.0", func() ([]byte, error) {
			return a2a.MarshalEvent(a2a.Event{Status: &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateWorking}}, Final: true}, a2a.V10)
		}, `{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`},
		{"status 0.3", func() ([]byte, error) {
			return a2a.MarshalEvent(a2a.Event{Status: &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateInputRequired}}, Final: true}, a2a.V03)
		}, `{"taskId":"t","contextId":"c","status":{"state":"input-required"},"kind":"status-update","final":true}`},
		{"artifact 1.0", func() ([]byte, error) {
			return a2a.MarshalEvent(a2a.Event{Artifact: &a2a.TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`1`))}}}}, a2a.V10)
		}, `{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"data":1,"mediaType":"application/json"}]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.got()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestAppendError(t *testing.T) {
	got := string(a2a.AppendError(nil, jsonrpcID(t), a2a.TaskNotFound("t1"), "abc"))
	want := `{"jsonrpc":"2.0","error":{"code":-32001,"message":"Task not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"taskId":"t1"}},{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TRACE","domain":"gatehouse","metadata":{"trace_id":"abc"}}]},"id":7}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
