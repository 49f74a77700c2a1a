package schemas_test

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	agentv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agent/v1"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
	calculatorv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/calculator/v1"
	commonv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/common/v1"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
	a2av1 "github.com/gatehouse-dev/gatehouse/schemas/gen/lf/a2a/v1"
	memoryv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/memory/v1"
	nektev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/nekte/v1"
	retrievalv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/retrieval/v1"
	toolv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/tool/v1"
)

// generatedFiles are the file descriptors of every generated package, keyed by .proto path.
var generatedFiles = map[string]protoreflect.FileDescriptor{
	"agent/v1/agent.proto":           agentv1.File_agent_v1_agent_proto,
	"agentlink/v1/agentlink.proto":   agentlinkv1.File_agentlink_v1_agentlink_proto,
	"calculator/v1/calculator.proto": calculatorv1.File_calculator_v1_calculator_proto,
	"common/v1/common.proto":         commonv1.File_common_v1_common_proto,
	"gatehouse/v1/agentpeer.proto":   gatehousev1.File_gatehouse_v1_agentpeer_proto,
	"gatehouse/v1/gateway.proto":     gatehousev1.File_gatehouse_v1_gateway_proto,
	"gatehouse/v1/peer.proto":        gatehousev1.File_gatehouse_v1_peer_proto,
	"lf/a2a/v1/a2a.proto":            a2av1.File_lf_a2a_v1_a2a_proto,
	"memory/v1/memory.proto":         memoryv1.File_memory_v1_memory_proto,
	"nekte/v1/nekte.proto":           nektev1.File_nekte_v1_nekte_proto,
	"retrieval/v1/retrieval.proto":   retrievalv1.File_retrieval_v1_retrieval_proto,
	"tool/v1/tool.proto":             toolv1.File_tool_v1_tool_proto,
}

// TestEveryProtoIsGenerated checks that each .proto under schemas/proto has generated code
// linked into this test, and nothing else does.
func TestEveryProtoIsGenerated(t *testing.T) {
	var sources []string
	root := filepath.Join(repoRoot, "schemas", "proto")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".proto") {
			rel, relErr := filepath.Rel(root, path)
			sources = append(sources, filepath.ToSlash(rel))
			return relErr
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range sources {
		if generatedFiles[src] == nil {
			t.Errorf("%s has no generated package in generatedFiles (run `make generate` and add it)", src)
		}
	}
	if len(sources) != len(generatedFiles) {
		t.Errorf("found %d .proto files, generatedFiles lists %d", len(sources), len(generatedFiles))
	}
}

// TestDescriptorsRegister checks that every generated file, message, enum and service is in
// the global registries under its full name, that the descriptors survive a round trip through
// descriptorpb, and that go_package follows the layout the gateway imports.
func TestDescriptorsRegister(t *testing.T) {
	for path, fd := range generatedFiles {
		t.Run(path, func(t *testing.T) {
			got, err := protoregistry.GlobalFiles.FindFileByPath(path)
			if err != nil {
				t.Fatalf("FindFileByPath: %v", err)
			}
			if got != fd {
				t.Errorf("registry holds a different descriptor for %s", path)
			}
			if _, err := protodesc.NewFile(protodesc.ToFileDescriptorProto(fd), protoregistry.GlobalFiles); err != nil {
				t.Errorf("descriptor does not round-trip: %v", err)
			}
			// Package a.v1 is generated into gen/a/v1 as Go package av1; a package with
			// more elements (lf.a2a.v1, the A2A specification's) nests the same way and
			// is named by its last two (a2av1).
			parts := strings.Split(string(fd.Package()), ".")
			wantGo := "github.com/gatehouse-dev/gatehouse/schemas/gen/" + strings.Join(parts, "/") + ";" +
				parts[max(len(parts)-2, 0)] + parts[len(parts)-1]
			if goPkg := protodesc.ToFileDescriptorProto(fd).GetOptions().GetGoPackage(); goPkg != wantGo {
				t.Errorf("go_package = %q, want %q", goPkg, wantGo)
			}
			checkMessagesRegistered(t, fd.Messages())
			checkEnumsRegistered(t, fd.Enums())
			for i := range fd.Services().Len() {
				sd := fd.Services().Get(i)
				if _, err := protoregistry.GlobalFiles.FindDescriptorByName(sd.FullName()); err != nil {
					t.Errorf("service %s: %v", sd.FullName(), err)
				}
			}
		})
	}
}

func checkMessagesRegistered(t *testing.T, msgs protoreflect.MessageDescriptors) {
	t.Helper()
	for i := range msgs.Len() {
		md := msgs.Get(i)
		if md.IsMapEntry() {
			continue
		}
		mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
		if err != nil {
			t.Errorf("message %s: %v", md.FullName(), err)
			continue
		}
		if mt.New().Interface() == nil {
			t.Errorf("message %s: New returned nil", md.FullName())
		}
		checkMessagesRegistered(t, md.Messages())
		checkEnumsRegistered(t, md.Enums())
	}
}

func checkEnumsRegistered(t *testing.T, enums protoreflect.EnumDescriptors) {
	t.Helper()
	for i := range enums.Len() {
		ed := enums.Get(i)
		if _, err := protoregistry.GlobalTypes.FindEnumByName(ed.FullName()); err != nil {
			t.Errorf("enum %s: %v", ed.FullName(), err)
		}
	}
}

// TestSchemasCoverTranscoding checks that, across all packages, the schemas still use every
// protobuf shape the JSON<->protobuf transcoder must handle, so that a trim of the schemas
// cannot silently shrink what the transcoding tests exercise.
func TestSchemasCoverTranscoding(t *testing.T) {
	seen := map[string]bool{}
	for _, fd := range generatedFiles {
		collectShapes(fd.Messages(), seen)
	}
	want := []string{
		"int32", "int64", "uint32", "uint64", "sint32", "sint64",
		"fixed32", "fixed64", "sfixed32", "sfixed64",
		"float", "double", "bool", "string", "bytes",
		"enum", "oneof", "map", "repeated", "nested message",
		"google.protobuf.Timestamp", "google.protobuf.Duration",
		"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue",
		"google.protobuf.FieldMask", "google.protobuf.Any",
		"google.protobuf.StringValue", "google.protobuf.UInt32Value",
		"google.protobuf.UInt64Value", "google.protobuf.DoubleValue",
	}
	for _, shape := range want {
		if !seen[shape] {
			t.Errorf("no field of shape %q is left in schemas/proto", shape)
		}
	}
	if !usesEmptyResponse() {
		t.Error("no RPC returns google.protobuf.Empty")
	}
}

func collectShapes(msgs protoreflect.MessageDescriptors, seen map[string]bool) {
	for i := range msgs.Len() {
		md := msgs.Get(i)
		if md.IsMapEntry() {
			continue // its key and value are counted as the map field
		}
		for j := range md.Fields().Len() {
			fd := md.Fields().Get(j)
			switch {
			case fd.IsMap():
				seen["map"] = true
			case fd.IsList():
				seen["repeated"] = true
			}
			if fd.ContainingOneof() != nil && !fd.ContainingOneof().IsSynthetic() {
				seen["oneof"] = true
			}
			switch fd.Kind() {
			case protoreflect.MessageKind, protoreflect.GroupKind:
				name := string(fd.Message().FullName())
				if strings.HasPrefix(name, "google.protobuf.") {
					seen[name] = true
				} else if !fd.IsMap() {
					seen["nested message"] = true
				}
			case protoreflect.EnumKind:
				seen["enum"] = true
			default:
				seen[fd.Kind().String()] = true
			}
		}
		collectShapes(md.Messages(), seen)
	}
}

func usesEmptyResponse() bool {
	for _, fd := range generatedFiles {
		for i := range fd.Services().Len() {
			methods := fd.Services().Get(i).Methods()
			for j := range methods.Len() {
				if methods.Get(j).Output().FullName() == "google.protobuf.Empty" {
					return true
				}
			}
		}
	}
	return false
}
