package agentlink

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"google.golang.org/protobuf/proto"

	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// FuzzAgentMessage decodes arbitrary bytes as an agent message and runs the check its
// member gets: no input may panic, and a message that passes has bounded fields.
func FuzzAgentMessage(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	// Real schemas (tools/list) and results (agent routes' responses) in the messages an agent sends.
	for i, schema := range fuzzseed.Find(f, "inputSchema", fuzzseed.MCPResponse) {
		b, err := proto.Marshal(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_NodeDescriptor{NodeDescriptor: &agentlinkv1.NodeDescriptor{
			AgentId: "a1", ProtocolVersions: []string{"1.0.0"}, Operators: []*agentlinkv1.Operator{{Id: fmt.Sprint("op", i), InputSchemaJson: string(schema)}}}}})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, out := range fuzzseed.Members(f, "result", fuzzseed.AgentResponse, fuzzseed.MCPResponse) {
		b, err := proto.Marshal(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Result{Result: &agentlinkv1.TaskResult{
			TaskId: "j/1", Status: agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, OutputJson: out}}})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	cfg := Config{}.WithDefaults()
	seeds := []*agentlinkv1.ConnectRequest{
		{Message: &agentlinkv1.ConnectRequest_NodeDescriptor{NodeDescriptor: &agentlinkv1.NodeDescriptor{AgentId: "a1", ProtocolVersions: []string{"1.0.0"},
			Operators: []*agentlinkv1.Operator{{Id: "echo", InputSchemaJson: `{"type":"object"}`, OutputSchemaJson: `{"type":"string"}`}}}}},
		{Message: &agentlinkv1.ConnectRequest_Ack{Ack: &agentlinkv1.TaskAck{TaskId: "j/1", Accepted: true}}},
		{Message: &agentlinkv1.ConnectRequest_Progress{Progress: &agentlinkv1.TaskProgress{TaskId: "j/1", Progress: 1, Total: 2}}},
		{Message: &agentlinkv1.ConnectRequest_Result{Result: &agentlinkv1.TaskResult{TaskId: "j/1", Status: agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED,
			OutputJson: []byte(`{"a":1}`), OutputRefs: []*agentlinkv1.DataRef{{Uri: "https://x/y"}}}}},
		{Message: &agentlinkv1.ConnectRequest_Heartbeat{Heartbeat: &agentlinkv1.Heartbeat{Sequence: 9}}},
	}
	for _, s := range seeds {
		b, err := proto.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m agentlinkv1.ConnectRequest
		if proto.Unmarshal(b, &m) != nil {
			return
		}
		if checkFrame(&m, cfg.MaxFrameBytes) != nil {
			return
		}
		switch msg := m.GetMessage().(type) {
		case *agentlinkv1.ConnectRequest_NodeDescriptor:
			ops, err := checkDescriptor(msg.NodeDescriptor, &cfg)
			if err == nil {
				if len(ops) == 0 || len(ops) > cfg.MaxOperators {
					t.Fatalf("%d operators passed", len(ops))
				}
				for _, op := range ops {
					if !validOperatorID(op.id) || op.inSchema == nil {
						t.Fatalf("operator %q passed unchecked", op.id)
					}
				}
				_, _ = negotiate(cfg.Versions, msg.NodeDescriptor.GetProtocolVersions())
			}
		case *agentlinkv1.ConnectRequest_Ack:
			if checkAck(msg.Ack) == nil && !validTaskID(msg.Ack.GetTaskId()) {
				t.Fatal("an invalid task id passed")
			}
		case *agentlinkv1.ConnectRequest_Progress:
			_ = checkProgress(msg.Progress)
		case *agentlinkv1.ConnectRequest_Result:
			if checkResult(msg.Result) == nil && len(msg.Result.GetDiagnostics()) > maxDiagnosticsLen {
				t.Fatal("oversized diagnostics passed")
			}
		}
	})
}

// FuzzVersion checks that parseVersion accepts exactly what it prints back.
func FuzzVersion(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, v := range fuzzseed.Find(f, "protocolVersion", fuzzseed.MCPRequest, fuzzseed.MCPResponse) {
		var s string
		if json.Unmarshal(v, &s) == nil {
			f.Add(s)
		}
	}
	for _, s := range []string{"1.0.0", "10.20.30", "01.0.0", "1.0", "1.0.0-rc1", "+1.0.0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseVersion(s)
		if err == nil && v.String() != s {
			t.Fatalf("parseVersion(%q) = %v", s, v)
		}
		if _, err := negotiate([]string{"1.0.0"}, []string{s}); err != nil && !strings.Contains(err.Error(), "1.0.0") {
			t.Fatalf("a refusal that does not name the gateway's versions: %v", err)
		}
	})
}

// FuzzTaskParams checks the split of a call's params into input and reserved members.
func FuzzTaskParams(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, c := range fuzzseed.Calls(f, fuzzseed.AgentRequest, fuzzseed.MCPRequest) {
		if c.Params != nil {
			f.Add(c.Params)
		}
	}
	for _, s := range []string{`{}`, `{"text":"x"}`, `{"data_refs":[{"uri":"u"}],"affinity_key":"k","job_id":"j"}`, `[1]`, `null`, `{"job_id":5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		task, _, err := taskOf("op", b)
		if err != nil {
			return
		}
		if strings.Contains(string(task.Input), `"`+ParamDataRefs+`"`) && len(task.Refs) > 0 {
			t.Fatalf("data_refs left in the input: %s", task.Input)
		}
		if len(task.Refs) > maxRefs {
			t.Fatalf("%d refs passed", len(task.Refs))
		}
	})
}
