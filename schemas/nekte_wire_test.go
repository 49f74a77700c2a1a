package schemas_test

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	nektev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/nekte/v1"
)

// nekteField is one field of the NEKTE gRPC binding as the wire contract
// (shared/reference/nekte-wire.md, "gRPC transport") lists it. typ is the protobuf scalar
// type, or the message's short name, prefixed with "repeated " for a list.
type nekteField struct {
	message string
	field   string
	number  protoreflect.FieldNumber
	typ     string
}

// nekteWire is the contract, transcribed by hand: every message of package nekte.v1 with its
// fields numbered from 1 in the listed order (unlabelled fields are string). Changing a row
// breaks wire compatibility with NEKTE peers; the test exists so that it cannot happen quietly.
var nekteWire = []nekteField{
	{"TokenBudget", "max_tokens", 1, "int32"},
	{"TokenBudget", "detail_level", 2, "string"},

	{"CostHint", "avg_ms", 1, "int32"},
	{"CostHint", "avg_tokens", 2, "int32"},

	{"CapabilityRef", "id", 1, "string"},
	{"CapabilityRef", "cat", 2, "string"},
	{"CapabilityRef", "h", 3, "string"},

	{"CapabilitySummary", "id", 1, "string"},
	{"CapabilitySummary", "cat", 2, "string"},
	{"CapabilitySummary", "h", 3, "string"},
	{"CapabilitySummary", "desc", 4, "string"},
	{"CapabilitySummary", "cost", 5, "CostHint"},

	{"CapabilityFull", "id", 1, "string"},
	{"CapabilityFull", "cat", 2, "string"},
	{"CapabilityFull", "h", 3, "string"},
	{"CapabilityFull", "desc", 4, "string"},
	{"CapabilityFull", "cost", 5, "CostHint"},
	{"CapabilityFull", "input_schema", 6, "bytes"},
	{"CapabilityFull", "output_schema", 7, "bytes"},
	{"CapabilityFull", "examples", 8, "repeated Example"},

	{"Example", "input", 1, "bytes"},
	{"Example", "output", 2, "bytes"},

	{"ContextPermissions", "forward", 1, "bool"},
	{"ContextPermissions", "persist", 2, "bool"},
	{"ContextPermissions", "derive", 3, "bool"},

	{"ContextEnvelope", "id", 1, "string"},
	{"ContextEnvelope", "data", 2, "bytes"},
	{"ContextEnvelope", "compression", 3, "string"},
	{"ContextEnvelope", "permissions", 4, "ContextPermissions"},
	{"ContextEnvelope", "ttl_s", 5, "int32"},
	{"ContextEnvelope", "budget_hint", 6, "int32"},

	{"MultiLevelResult", "minimal", 1, "string"},
	{"MultiLevelResult", "compact", 2, "bytes"},
	{"MultiLevelResult", "full", 3, "bytes"},

	{"ResultMeta", "ms", 1, "int32"},
	{"ResultMeta", "tokens_used", 2, "int32"},

	{"DiscoverFilter", "category", 1, "string"},
	{"DiscoverFilter", "query", 2, "string"},
	{"DiscoverFilter", "id", 3, "string"},
	{"DiscoverFilter", "top_k", 4, "int32"},
	{"DiscoverFilter", "threshold", 5, "float"},

	{"DiscoverRequest", "level", 1, "int32"},
	{"DiscoverRequest", "filter", 2, "DiscoverFilter"},

	{"DiscoverResponse", "agent", 1, "string"},
	{"DiscoverResponse", "version", 2, "string"},
	{"DiscoverResponse", "refs", 3, "repeated CapabilityRef"},
	{"DiscoverResponse", "summaries", 4, "repeated CapabilitySummary"},
	{"DiscoverResponse", "schemas", 5, "repeated CapabilityFull"},

	{"InvokeRequest", "cap", 1, "string"},
	{"InvokeRequest", "h", 2, "string"},
	{"InvokeRequest", "input", 3, "bytes"},
	{"InvokeRequest", "budget", 4, "TokenBudget"},

	{"InvokeResponse", "output", 1, "bytes"},
	{"InvokeResponse", "resolved_level", 2, "string"},
	{"InvokeResponse", "meta", 3, "ResultMeta"},
	{"InvokeResponse", "error", 4, "InvokeError"},

	{"InvokeError", "code", 1, "int32"},
	{"InvokeError", "message", 2, "string"},
	{"InvokeError", "current_hash", 3, "string"},
	{"InvokeError", "schema", 4, "CapabilityFull"},

	{"Task", "id", 1, "string"},
	{"Task", "desc", 2, "string"},
	{"Task", "timeout_ms", 3, "int32"},
	{"Task", "budget", 4, "TokenBudget"},

	{"DelegateRequest", "task", 1, "Task"},
	{"DelegateRequest", "context", 2, "ContextEnvelope"},

	{"DelegateEvent", "progress", 1, "ProgressEvent"},
	{"DelegateEvent", "partial", 2, "PartialEvent"},
	{"DelegateEvent", "complete", 3, "CompleteEvent"},
	{"DelegateEvent", "error", 4, "ErrorEvent"},
	{"DelegateEvent", "cancelled", 5, "CancelledEvent"},
	{"DelegateEvent", "suspended", 6, "SuspendedEvent"},
	{"DelegateEvent", "resumed", 7, "ResumedEvent"},
	{"DelegateEvent", "status_change", 8, "StatusChangeEvent"},

	{"ProgressEvent", "processed", 1, "int32"},
	{"ProgressEvent", "total", 2, "int32"},
	{"ProgressEvent", "message", 3, "string"},

	{"PartialEvent", "output", 1, "bytes"},
	{"PartialEvent", "resolved_level", 2, "string"},

	{"CompleteEvent", "task_id", 1, "string"},
	{"CompleteEvent", "output", 2, "MultiLevelResult"},
	{"CompleteEvent", "meta", 3, "ResultMeta"},

	{"ErrorEvent", "task_id", 1, "string"},
	{"ErrorEvent", "code", 2, "int32"},
	{"ErrorEvent", "message", 3, "string"},

	{"CancelledEvent", "task_id", 1, "string"},
	{"CancelledEvent", "reason", 2, "string"},
	{"CancelledEvent", "previous_status", 3, "string"},

	{"SuspendedEvent", "task_id", 1, "string"},
	{"SuspendedEvent", "checkpoint_available", 2, "bool"},

	{"ResumedEvent", "task_id", 1, "string"},
	{"ResumedEvent", "from_checkpoint", 2, "bool"},

	{"StatusChangeEvent", "task_id", 1, "string"},
	{"StatusChangeEvent", "from_status", 2, "string"},
	{"StatusChangeEvent", "to_status", 3, "string"},
	{"StatusChangeEvent", "reason", 4, "string"},

	{"ContextRequest", "action", 1, "string"},
	{"ContextRequest", "envelope", 2, "ContextEnvelope"},

	{"ContextResponse", "id", 1, "string"},
	{"ContextResponse", "status", 2, "string"},
	{"ContextResponse", "envelope", 3, "ContextEnvelope"},

	{"VerifyRequest", "task_id", 1, "string"},
	{"VerifyRequest", "checks", 2, "repeated string"},
	{"VerifyRequest", "budget", 3, "TokenBudget"},

	{"VerifyResponse", "task_id", 1, "string"},
	{"VerifyResponse", "checks", 2, "repeated string"},
	{"VerifyResponse", "status", 3, "string"},
	{"VerifyResponse", "data", 4, "bytes"},

	{"TaskCancelRequest", "task_id", 1, "string"},
	{"TaskCancelRequest", "reason", 2, "string"},

	{"TaskResumeRequest", "task_id", 1, "string"},
	{"TaskResumeRequest", "budget", 2, "TokenBudget"},

	{"TaskStatusRequest", "task_id", 1, "string"},

	{"TaskLifecycleResponse", "task_id", 1, "string"},
	{"TaskLifecycleResponse", "status", 2, "string"},
	{"TaskLifecycleResponse", "previous_status", 3, "string"},

	{"TaskStatusResponse", "task_id", 1, "string"},
	{"TaskStatusResponse", "status", 2, "string"},
	{"TaskStatusResponse", "progress_processed", 3, "int32"},
	{"TaskStatusResponse", "progress_total", 4, "int32"},
	{"TaskStatusResponse", "checkpoint_available", 5, "bool"},
	{"TaskStatusResponse", "created_at", 6, "int64"},
	{"TaskStatusResponse", "updated_at", 7, "int64"},
}

// nekteRPC is one RPC of service nekte.v1.Nekte.
type nekteRPC struct {
	method          string
	input, output   string
	serverStreaming bool
}

var nekteRPCs = []nekteRPC{
	{"Discover", "DiscoverRequest", "DiscoverResponse", false},
	{"Invoke", "InvokeRequest", "InvokeResponse", false},
	{"Delegate", "DelegateRequest", "DelegateEvent", true},
	{"Context", "ContextRequest", "ContextResponse", false},
	{"Verify", "VerifyRequest", "VerifyResponse", false},
	{"TaskCancel", "TaskCancelRequest", "TaskLifecycleResponse", false},
	{"TaskResume", "TaskResumeRequest", "TaskLifecycleResponse", false},
	{"TaskStatus", "TaskStatusRequest", "TaskStatusResponse", false},
}

// TestNekteWireFields checks every message and field of nekte.v1 against the wire contract:
// same names, numbers and types, nothing missing and nothing extra.
func TestNekteWireFields(t *testing.T) {
	fd := nektev1.File_nekte_v1_nekte_proto
	if fd.Package() != "nekte.v1" {
		t.Fatalf("package = %s, want nekte.v1", fd.Package())
	}
	want := map[string]int{} // message -> number of fields in the contract
	for _, row := range nekteWire {
		want[row.message]++
		md := fd.Messages().ByName(protoreflect.Name(row.message))
		if md == nil {
			t.Errorf("message %s is missing", row.message)
			continue
		}
		f := md.Fields().ByName(protoreflect.Name(row.field))
		if f == nil {
			t.Errorf("%s.%s is missing", row.message, row.field)
			continue
		}
		if f.Number() != row.number {
			t.Errorf("%s.%s is field %d, want %d", row.message, row.field, f.Number(), row.number)
		}
		if got := nekteType(f); got != row.typ {
			t.Errorf("%s.%s has type %q, want %q", row.message, row.field, got, row.typ)
		}
		if f.HasPresence() && f.Kind() != protoreflect.MessageKind && f.ContainingOneof() == nil {
			t.Errorf("%s.%s is declared optional; the contract uses plain proto3 fields", row.message, row.field)
		}
	}
	msgs := fd.Messages()
	for i := range msgs.Len() {
		md := msgs.Get(i)
		n, ok := want[string(md.Name())]
		switch {
		case !ok:
			t.Errorf("message %s is not in the wire contract", md.Name())
		case md.Fields().Len() != n:
			t.Errorf("%s has %d fields, the contract lists %d", md.Name(), md.Fields().Len(), n)
		}
	}
}

// TestNekteDelegateEventOneof checks that every DelegateEvent field belongs to the one oneof
// `event`, numbered 1..8 as the contract lists them.
func TestNekteDelegateEventOneof(t *testing.T) {
	md := (&nektev1.DelegateEvent{}).ProtoReflect().Descriptor()
	if md.Oneofs().Len() != 1 || md.Oneofs().Get(0).Name() != "event" {
		t.Fatalf("DelegateEvent must have exactly one oneof named event")
	}
	oneof := md.Oneofs().Get(0)
	if oneof.Fields().Len() != 8 {
		t.Errorf("oneof event has %d members, want 8", oneof.Fields().Len())
	}
	for i := range oneof.Fields().Len() {
		if f := oneof.Fields().Get(i); f.Number() != protoreflect.FieldNumber(i+1) {
			t.Errorf("oneof member %d is %s = %d", i, f.Name(), f.Number())
		}
	}
}

// TestNekteService checks the RPCs of nekte.v1.Nekte: names, request and response types, and
// streaming shape (only Delegate streams, from the server).
func TestNekteService(t *testing.T) {
	fd := nektev1.File_nekte_v1_nekte_proto
	if fd.Services().Len() != 1 {
		t.Fatalf("nekte.v1 declares %d services, want 1", fd.Services().Len())
	}
	sd := fd.Services().Get(0)
	if sd.FullName() != "nekte.v1.Nekte" {
		t.Fatalf("service is %s, want nekte.v1.Nekte", sd.FullName())
	}
	if sd.Methods().Len() != len(nekteRPCs) {
		t.Errorf("Nekte has %d RPCs, want %d", sd.Methods().Len(), len(nekteRPCs))
	}
	for _, rpc := range nekteRPCs {
		m := sd.Methods().ByName(protoreflect.Name(rpc.method))
		if m == nil {
			t.Errorf("RPC %s is missing", rpc.method)
			continue
		}
		if got := string(m.Input().FullName()); got != "nekte.v1."+rpc.input {
			t.Errorf("%s takes %s, want nekte.v1.%s", rpc.method, got, rpc.input)
		}
		if got := string(m.Output().FullName()); got != "nekte.v1."+rpc.output {
			t.Errorf("%s returns %s, want nekte.v1.%s", rpc.method, got, rpc.output)
		}
		if m.IsStreamingClient() || m.IsStreamingServer() != rpc.serverStreaming {
			t.Errorf("%s: client streaming %v, server streaming %v; want false, %v",
				rpc.method, m.IsStreamingClient(), m.IsStreamingServer(), rpc.serverStreaming)
		}
	}
	if got, want := nektev1.Nekte_Delegate_FullMethodName, "/nekte.v1.Nekte/Delegate"; got != want {
		t.Errorf("Delegate method path = %s, want %s", got, want)
	}
}

// nekteType spells a field's type the way the contract does.
func nekteType(f protoreflect.FieldDescriptor) string {
	typ := f.Kind().String()
	if f.Kind() == protoreflect.MessageKind {
		typ = string(f.Message().Name())
	}
	if f.IsList() {
		return "repeated " + typ
	}
	return typ
}
