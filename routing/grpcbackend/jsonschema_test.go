package grpcbackend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
	agentv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agent/v1"
	calculatorv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/calculator/v1"
	commonv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/common/v1"
	memoryv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/memory/v1"
)

func TestMessageSchema(t *testing.T) {
	tests := []struct {
		name string
		md   protoreflect.MessageDescriptor
		want string
	}{
		{"doubles", (&calculatorv1.SubtractRequest{}).ProtoReflect().Descriptor(),
			`{"type":"object","properties":{"minuend":{"type":"number"},"subtrahend":{"type":"number"}}}`},
		{"repeated", (&calculatorv1.SumRequest{}).ProtoReflect().Descriptor(),
			`{"type":"object","properties":{"values":{"type":"array","items":{"type":"number"}}}}`},
		{"int64 and duration", (&calculatorv1.CountRequest{}).ProtoReflect().Descriptor(),
			`{"type":"object","properties":{"from":{"type":["integer","string"],"pattern":"^-?[0-9]+$"},` +
				`"to":{"type":["integer","string"],"pattern":"^-?[0-9]+$"},` +
				`"interval":{"type":"string","pattern":"^-?[0-9]+(\\.[0-9]{1,9})?s$"}}}`},
		{"sint64 and uint64", (&calculatorv1.AccumulateResponse{}).ProtoReflect().Descriptor(),
			`{"type":"object","properties":{"total":{"type":["integer","string"],"pattern":"^-?[0-9]+$"},` +
				`"count":{"type":["integer","string"],"minimum":0,"pattern":"^[0-9]+$"}}}`},
		{"empty message", (&calculatorv1.GetDataRequest{}).ProtoReflect().Descriptor(), `{"type":"object"}`},
		{"Value", (&calculatorv1.GetDataResponse{}).ProtoReflect().Descriptor(),
			`{"type":"object","properties":{"result":{"type":"array","items":{}}}}`},
		{"bytes, fixed32, map", (&commonv1.TraceContext{}).ProtoReflect().Descriptor(),
			`{"type":"object","properties":{"traceId":{"type":"string","contentEncoding":"base64"},` +
				`"spanId":{"type":"string","contentEncoding":"base64"},"traceFlags":{"type":"integer","minimum":0},` +
				`"traceState":{"type":"string"},"baggage":{"type":"object","additionalProperties":{"type":"string"}}}}`},
		{"wrappers, field mask, enums", (&memoryv1.MemoryReadRequest{}).ProtoReflect().Descriptor(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := grpcbackend.MessageSchema(tt.md)
			if !json.Valid(got) {
				t.Fatalf("not JSON: %s", got)
			}
			if tt.want != "" && string(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			compile(t, got)
		})
	}
}

func TestMessageSchemaMembers(t *testing.T) {
	tests := []struct {
		name     string
		md       protoreflect.MessageDescriptor
		contains []string
	}{
		{"wrappers, field mask, enum", (&memoryv1.MemoryReadRequest{}).ProtoReflect().Descriptor(), []string{
			`"readMask":{"type":"string"}`,
			`"version":{"type":["integer","string"],"minimum":0,"pattern":"^[0-9]+$"}`,
			`"layer":{"enum":["MEMORY_LAYER_UNSPECIFIED","MEMORY_LAYER_WORKING"`,
		}},
		{"timestamp", (&commonv1.AuthContext{}).ProtoReflect().Descriptor(), []string{
			`"expiresAt":{"type":"string","format":"date-time"}`, `"actorChain":{"type":"array","items":{"type":"string"}}`,
		}},
		{"oneof", (&agentv1.WatchTaskResponse{}).ProtoReflect().Descriptor(), []string{
			`"oneOf":[{"required":["stepResult"]},{"required":["status"]},{"required":["completion"]},` +
				`{"not":{"anyOf":[{"required":["stepResult"]},{"required":["status"]},{"required":["completion"]}]}}]`,
			`"detail":{"type":"object","properties":{"@type":{"type":"string"}}}`,
			`"result":{"type":"object"}`,
		}},
		{"map of uint32", (&agentv1.ReportProgressResponse{}).ProtoReflect().Descriptor(), []string{
			`"lastStepByTask":{"type":"object","additionalProperties":{"type":"integer","minimum":0}}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(grpcbackend.MessageSchema(tt.md))
			for _, want := range tt.contains {
				if !strings.Contains(got, want) {
					t.Errorf("missing %s\nin %s", want, got)
				}
			}
			compile(t, []byte(got))
		})
	}
}

// recursiveProto has a self-recursive message, mutual recursion, a map with integer keys,
// a message reached twice without recursion, comments and two oneofs.
const recursiveProto = `syntax = "proto3";
package rec.v1;

// Tree is a node of a tree.
message Tree {
  // The label.
  string label = 1;
  // The subtrees.
  repeated Tree children = 2;
  Forest forest = 3;
  map<int32, Leaf> by_index = 4;
  Leaf first = 5;
  Leaf last = 6;
  oneof a { string a1 = 7; int32 a2 = 8; }
  oneof b { bool b1 = 9; bytes b2 = 10; }
  optional string note = 11;
}

message Forest { repeated Tree trees = 1; }

message Leaf { map<bool, string> flags = 1; }

message Holder { Forest forest = 1; Leaf leaf = 2; }
`

func compileProto(t *testing.T, src string) protoreflect.FileDescriptor {
	t.Helper()
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(map[string]string{"rec.proto": src})}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	files, err := c.Compile(context.Background(), "rec.proto")
	if err != nil {
		t.Fatal(err)
	}
	return files[0]
}

func TestMessageSchemaRecursion(t *testing.T) {
	fd := compileProto(t, recursiveProto)
	tests := []struct {
		msg      string
		contains []string
		absent   []string
	}{
		{"Tree", []string{
			`{"description":"Tree is a node of a tree.","type":"object"`,
			`"label":{"description":"The label.","type":"string"}`,
			`"children":{"description":"The subtrees.","type":"array","items":{"$ref":"#"}}`,
			`"forest":{"$ref":"#/$defs/rec.v1.Forest"}`,
			`"$defs":{"rec.v1.Forest":{"type":"object","properties":{"trees":{"type":"array","items":{"$ref":"#"}}}}}`,
			`"byIndex":{"type":"object","propertyNames":{"pattern":"^-?[0-9]+$"},"additionalProperties":{"type":"object","properties":{"flags":{"type":"object","propertyNames":{"enum":["true","false"]}`,
			`"allOf":[{"oneOf":[{"required":["a1"]},{"required":["a2"]},{"not"`,
			`"note":{"type":"string"}`,
		}, []string{`"rec.v1.Leaf"`, `"rec.v1.Tree":`}},
		{"Holder", []string{
			`"forest":{"$ref":"#/$defs/rec.v1.Forest"}`,
			`"rec.v1.Forest":{"type":"object","properties":{"trees":{"type":"array","items":{"$ref":"#/$defs/rec.v1.Tree"}}}}`,
			`"rec.v1.Tree":{"description":"Tree is a node of a tree."`,
		}, []string{`"$ref":"#"`}},
		{"Leaf", []string{`{"type":"object","properties":{"flags"`}, []string{`$defs`}},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			md := fd.Messages().ByName(protoreflect.Name(tt.msg))
			got := string(grpcbackend.MessageSchema(md))
			for _, want := range tt.contains {
				if !strings.Contains(got, want) {
					t.Errorf("missing %s\nin %s", want, got)
				}
			}
			for _, bad := range tt.absent {
				if strings.Contains(got, bad) {
					t.Errorf("unexpected %s\nin %s", bad, got)
				}
			}
			compile(t, []byte(got))
		})
	}
}

// TestMessageSchemaAcceptsProtojson fills every field of messages with values and checks
// that what protojson writes for them validates against the schema, and that a value of
// the wrong type does not.
func TestMessageSchemaAcceptsProtojson(t *testing.T) {
	rec := compileProto(t, recursiveProto)
	mds := []protoreflect.MessageDescriptor{
		(&agentv1.AgentTask{}).ProtoReflect().Descriptor(),
		(&agentv1.AgentStepResult{}).ProtoReflect().Descriptor(),
		(&agentv1.CoordinateExecutionRequest{}).ProtoReflect().Descriptor(),
		(&agentv1.ReportProgressResponse{}).ProtoReflect().Descriptor(),
		(&memoryv1.MemorySearchRequest{}).ProtoReflect().Descriptor(),
		(&memoryv1.MemoryWriteRequest{}).ProtoReflect().Descriptor(),
		(&commonv1.TraceContext{}).ProtoReflect().Descriptor(),
		(&calculatorv1.CountRequest{}).ProtoReflect().Descriptor(),
		(&calculatorv1.GetDataResponse{}).ProtoReflect().Descriptor(),
		rec.Messages().ByName("Tree"),
		rec.Messages().ByName("Holder"),
	}
	for _, md := range mds {
		t.Run(string(md.FullName()), func(t *testing.T) {
			sch := compile(t, grpcbackend.MessageSchema(md))
			for variant := range 2 {
				msg := dynamicpb.NewMessage(md)
				fill(msg, 0, variant)
				js, err := protojson.Marshal(msg)
				if err != nil {
					t.Fatal(err)
				}
				if err := sch.Validate(decode(t, js)); err != nil {
					t.Fatalf("protojson output %s\ndoes not validate: %v", js, err)
				}
			}
			fields := md.Fields()
			for i := range fields.Len() {
				fd := fields.Get(i)
				if fd.Message() != nil && fd.Message().FullName() == "google.protobuf.Value" {
					continue // any value is a Value
				}
				bad := `{"` + fd.JSONName() + `":` + wrongValue(fd) + `}`
				if sch.Validate(decode(t, []byte(bad))) == nil {
					t.Errorf("%s validates", bad)
				}
			}
		})
	}
}

// wrongValue returns a JSON value of a type field fd never takes.
func wrongValue(fd protoreflect.FieldDescriptor) string {
	if fd.IsList() || fd.IsMap() || fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.EnumKind {
		return `true`
	}
	if fd.Kind() == protoreflect.StringKind || fd.Kind() == protoreflect.BytesKind {
		return `12`
	}
	return `{}`
}

// fill sets every field of m (oneofs: the variant-th member) to a non-default value,
// down to a depth of 3.
func fill(m protoreflect.Message, depth, variant int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && od.Fields().Get(variant%od.Fields().Len()) != fd {
			continue
		}
		if fd.Message() != nil && depth >= 3 {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			mp.Set(mapKey(fd.MapKey()), value(m.NewField(fd).Map().NewValue(), fd.MapValue(), depth, variant))
		case fd.IsList():
			l := m.Mutable(fd).List()
			l.Append(value(l.NewElement(), fd, depth, variant))
		default:
			m.Set(fd, value(m.NewField(fd), fd, depth, variant))
		}
	}
}

func mapKey(fd protoreflect.FieldDescriptor) protoreflect.MapKey {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("k").MapKey()
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true).MapKey()
	default:
		return scalarValue(fd).MapKey()
	}
}

func value(zero protoreflect.Value, fd protoreflect.FieldDescriptor, depth, variant int) protoreflect.Value {
	if fd.Message() == nil {
		return scalarValue(fd)
	}
	m := zero.Message()
	switch fd.Message().FullName() {
	case "google.protobuf.Timestamp", "google.protobuf.Duration":
		m.Set(fd.Message().Fields().ByName("seconds"), protoreflect.ValueOfInt64(90))
	case "google.protobuf.Any":
		return zero // an empty Any is written as {}
	case "google.protobuf.Value":
		m.Set(fd.Message().Fields().ByName("string_value"), protoreflect.ValueOfString("v"))
	case "google.protobuf.FieldMask":
		m.Mutable(fd.Message().Fields().ByName("paths")).List().Append(protoreflect.ValueOfString("a.b"))
	default:
		fill(m, depth+1, variant)
	}
	return zero
}

func scalarValue(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("s")
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{1, 2, 3})
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(fd.Enum().Values().Get(fd.Enum().Values().Len() - 1).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(-7)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(-1 << 40)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(1 << 40)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(1.5)
	default:
		return protoreflect.ValueOfFloat64(2.5)
	}
}

func TestFieldSchemaAndMethods(t *testing.T) {
	addr := serveCalculator(t)
	b := newBackend(t, grpcbackend.Config{
		Name: "calc", Address: addr, Descriptors: protosSource(),
		Methods:  map[string]string{"subtract": calc + "/Subtract"},
		Services: []grpcbackend.ServiceConfig{{Service: calc, Prefix: "calc."}},
		Unwrap:   map[string]string{"subtract": "result"},
	})
	waitLoaded(t, b)
	ms := b.Methods()
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	want := "calc.accumulate calc.count calc.getData calc.notifyHello calc.notifySum calc.subtract calc.sum calc.sumStream calc.update subtract"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("methods %s, want %s", got, want)
	}
	sub := ms[len(ms)-1]
	if sub.Unwrap != "result" || sub.Descriptor.FullName() != calc+".Subtract" {
		t.Fatalf("subtract = %+v", sub)
	}
	if got, want := string(sub.OutputSchema()), `{"description":"minuend - subtrahend.","type":"number"}`; got != want {
		t.Fatalf("unwrapped output %s, want %s", got, want)
	}
	if got := string(sub.InputSchema()); !strings.Contains(got, `"description":"SubtractRequest holds the operands of a subtraction."`) ||
		!strings.Contains(got, `"minuend":{"description":"The number subtracted from.","type":"number"}`) {
		t.Fatalf("input %s has no descriptions from the .proto comments", got)
	}
	if got, want := string(ms[0].OutputSchema()), "total"; !strings.Contains(got, want) {
		t.Fatalf("accumulate output %s", got)
	}
}

func compile(t *testing.T, schema []byte) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem://schema.json", decode(t, schema)); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem://schema.json")
	if err != nil {
		t.Fatalf("schema does not compile: %v\n%s", err, schema)
	}
	return sch
}

func decode(t *testing.T, js []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
