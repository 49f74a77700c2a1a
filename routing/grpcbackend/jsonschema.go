package grpcbackend

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
)

// MessageSchema returns the JSON Schema (draft 2020-12) of md's JSON form, following the
// proto3 JSON mapping that protojson (and the gateway's transcoder) implements:
//
//   - a message is an object whose properties are its fields under their JSON names
//     (lowerCamel), in declaration order; nothing is required (proto3 fields are optional)
//     and other members are not forbidden, because protojson also accepts the fields'
//     proto names;
//   - bool is boolean; string is string; bytes is a base64 string; 32-bit integers are
//     integers (unsigned ones with minimum 0); 64-bit integers are an integer or a decimal
//     string (protojson writes them as strings); float and double are numbers;
//   - an enum is one of its value names; google.protobuf.NullValue is null;
//   - a repeated field is an array of its element; a map is an object whose members are
//     the values (integer and bool keys constrained by propertyNames);
//   - the members of a oneof exclude each other: a oneof constraint allows at most one
//     of them;
//   - the well-known types take their JSON forms: Timestamp an RFC 3339 date-time string,
//     Duration a string such as "1.5s", Struct an object, ListValue an array, Value any
//     JSON value, the wrappers their wrapped scalar, FieldMask a string, Empty an empty
//     object, Any an object with an "@type" member (absent when it is empty);
//   - a message that contains itself (directly or through others) is defined once under
//     $defs and referred to with $ref; the top message refers to itself as "#".
//
// Descriptions come from the leading comments of messages and fields when the descriptors
// carry source information (descriptors compiled from .proto sources do; generated code
// and server reflection usually do not).
func MessageSchema(md protoreflect.MessageDescriptor) json.RawMessage {
	g := newSchemaGen(md.FullName())
	g.findRecursive(md)
	root := g.messageRef(md, true)
	return g.finish(root)
}

// FieldSchema returns the JSON Schema of one field's JSON value (MessageSchema's rules),
// with any recursive message defined under $defs.
func FieldSchema(fd protoreflect.FieldDescriptor) json.RawMessage {
	g := newSchemaGen("")
	if m := fieldMessage(fd); m != nil {
		g.findRecursive(m)
	}
	return g.finish(g.field(fd))
}

// schemaGen builds the schema of one document.
type schemaGen struct {
	root      protoreflect.FullName // the message the document describes, if any
	recursive map[protoreflect.FullName]bool
	defs      map[string]*node
}

func newSchemaGen(root protoreflect.FullName) *schemaGen {
	return &schemaGen{root: root, recursive: map[protoreflect.FullName]bool{}, defs: map[string]*node{}}
}

// finish adds $defs to the root schema and writes the document.
func (g *schemaGen) finish(root *node) json.RawMessage {
	if len(g.defs) > 0 {
		names := make([]string, 0, len(g.defs))
		for n := range g.defs {
			names = append(names, n)
		}
		slices.Sort(names)
		defs := &node{}
		for _, n := range names {
			defs.set(n, g.defs[n])
		}
		root.set("$defs", defs)
	}
	return root.appendTo(nil)
}

// findRecursive marks every message reachable from md that can reach itself.
func (g *schemaGen) findRecursive(md protoreflect.MessageDescriptor) {
	reachable := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	var walk func(m protoreflect.MessageDescriptor)
	walk = func(m protoreflect.MessageDescriptor) {
		if _, seen := reachable[m.FullName()]; seen || wellKnown(m) != nil {
			return
		}
		reachable[m.FullName()] = m
		for _, c := range children(m) {
			walk(c)
		}
	}
	walk(md)
	for name, m := range reachable {
		if reaches(m, name, map[protoreflect.FullName]bool{}) {
			g.recursive[name] = true
		}
	}
}

// reaches reports whether target is reachable from m's fields.
func reaches(m protoreflect.MessageDescriptor, target protoreflect.FullName, seen map[protoreflect.FullName]bool) bool {
	for _, c := range children(m) {
		if c.FullName() == target {
			return true
		}
		if !seen[c.FullName()] && wellKnown(c) == nil {
			seen[c.FullName()] = true
			if reaches(c, target, seen) {
				return true
			}
		}
	}
	return false
}

// children returns the message types of m's fields (map values included).
func children(m protoreflect.MessageDescriptor) []protoreflect.MessageDescriptor {
	var out []protoreflect.MessageDescriptor
	fields := m.Fields()
	for i := range fields.Len() {
		if c := fieldMessage(fields.Get(i)); c != nil {
			out = append(out, c)
		}
	}
	return out
}

// fieldMessage returns the message type of a field's values (a map's value type), or nil.
func fieldMessage(fd protoreflect.FieldDescriptor) protoreflect.MessageDescriptor {
	if fd.IsMap() {
		fd = fd.MapValue()
	}
	return fd.Message()
}

// messageRef returns the schema of a message value: its well-known form, its object
// schema inline, or a reference to its definition when it is recursive.
func (g *schemaGen) messageRef(md protoreflect.MessageDescriptor, top bool) *node {
	if s := wellKnown(md); s != nil {
		return s
	}
	name := md.FullName()
	switch {
	case top || !g.recursive[name]:
		return g.object(md)
	case name == g.root:
		return (&node{}).set("$ref", "#")
	}
	key := string(name)
	if _, ok := g.defs[key]; !ok {
		g.defs[key] = &node{} // placeholder: the definition may refer to itself
		g.defs[key] = g.object(md)
	}
	return (&node{}).set("$ref", "#/$defs/"+key)
}

// object returns the object schema of a message.
func (g *schemaGen) object(md protoreflect.MessageDescriptor) *node {
	s := &node{}
	if d := comment(md); d != "" {
		s.set("description", d)
	}
	s.set("type", "object")
	fields := md.Fields()
	if fields.Len() > 0 {
		props := &node{}
		for i := range fields.Len() {
			fd := fields.Get(i)
			props.set(fd.JSONName(), g.field(fd))
		}
		s.set("properties", props)
	}
	var groups [][]*node
	oneofs := md.Oneofs()
	for i := range oneofs.Len() {
		if od := oneofs.Get(i); !od.IsSynthetic() && od.Fields().Len() > 1 {
			groups = append(groups, atMostOne(od))
		}
	}
	switch len(groups) {
	case 0:
	case 1:
		s.set("oneOf", groups[0])
	default:
		all := make([]*node, len(groups))
		for i, g := range groups {
			all[i] = (&node{}).set("oneOf", g)
		}
		s.set("allOf", all)
	}
	return s
}

// atMostOne returns the branches of a oneOf that holds when exactly one member of the
// oneof is present or none is: [{"required": [a]}, …, {"not": {"anyOf": [those]}}].
func atMostOne(od protoreflect.OneofDescriptor) []*node {
	fields := od.Fields()
	branches := make([]*node, 0, fields.Len()+1)
	for i := range fields.Len() {
		branches = append(branches, (&node{}).set("required", []string{fields.Get(i).JSONName()}))
	}
	none := (&node{}).set("not", (&node{}).set("anyOf", slices.Clone(branches)))
	return append(branches, none)
}

// field returns the schema of a field's JSON value.
func (g *schemaGen) field(fd protoreflect.FieldDescriptor) *node {
	var s *node
	switch {
	case fd.IsMap():
		s = (&node{}).set("type", "object")
		if keys := mapKeys(fd.MapKey()); keys != nil {
			s.set("propertyNames", keys)
		}
		s.set("additionalProperties", g.singular(fd.MapValue()))
	case fd.IsList():
		s = (&node{}).set("type", "array").set("items", g.singular(fd))
	default:
		s = g.singular(fd)
	}
	if d := comment(fd); d != "" {
		s = (&node{}).set("description", d).merge(s)
	}
	return s
}

// singular returns the schema of one value of a field.
func (g *schemaGen) singular(fd protoreflect.FieldDescriptor) *node {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return g.messageRef(fd.Message(), false)
	case protoreflect.EnumKind:
		return enumSchema(fd.Enum())
	default:
		return scalar(fd.Kind())
	}
}

// scalar returns the schema of a scalar kind.
func scalar(k protoreflect.Kind) *node {
	switch k {
	case protoreflect.BoolKind:
		return (&node{}).set("type", "boolean")
	case protoreflect.StringKind:
		return (&node{}).set("type", "string")
	case protoreflect.BytesKind:
		return (&node{}).set("type", "string").set("contentEncoding", "base64")
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return (&node{}).set("type", "integer")
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return (&node{}).set("type", "integer").set("minimum", 0)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return (&node{}).set("type", []string{"integer", "string"}).set("pattern", "^-?[0-9]+$")
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return (&node{}).set("type", []string{"integer", "string"}).set("minimum", 0).set("pattern", "^[0-9]+$")
	default: // float, double
		return (&node{}).set("type", "number")
	}
}

// enumSchema returns the schema of an enum: one of its value names.
func enumSchema(ed protoreflect.EnumDescriptor) *node {
	if ed.FullName() == "google.protobuf.NullValue" {
		return (&node{}).set("type", "null")
	}
	values := ed.Values()
	names := make([]string, 0, values.Len())
	for i := range values.Len() {
		names = append(names, string(values.Get(i).Name()))
	}
	return (&node{}).set("enum", names)
}

// mapKeys constrains the member names of a map with integer or bool keys (nil: any).
func mapKeys(fd protoreflect.FieldDescriptor) *node {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return (&node{}).set("enum", []string{"true", "false"})
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return (&node{}).set("pattern", "^-?[0-9]+$")
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return (&node{}).set("pattern", "^[0-9]+$")
	default:
		return nil
	}
}

// durationPattern is the JSON form of google.protobuf.Duration: seconds with up to nine
// fractional digits and the suffix "s".
const durationPattern = `^-?[0-9]+(\.[0-9]{1,9})?s$`

// wellKnown returns the schema of a well-known type's JSON form, or nil for other
// messages.
func wellKnown(md protoreflect.MessageDescriptor) *node {
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return (&node{}).set("type", "string").set("format", "date-time")
	case "google.protobuf.Duration":
		return (&node{}).set("type", "string").set("pattern", durationPattern)
	case "google.protobuf.Struct":
		return (&node{}).set("type", "object")
	case "google.protobuf.ListValue":
		return (&node{}).set("type", "array")
	case "google.protobuf.Value":
		return &node{}
	case "google.protobuf.Empty":
		return (&node{}).set("type", "object").set("maxProperties", 0)
	case "google.protobuf.FieldMask":
		return (&node{}).set("type", "string")
	case "google.protobuf.Any":
		// "@type" names the embedded message; an empty Any is written as {}.
		return (&node{}).set("type", "object").
			set("properties", (&node{}).set("@type", (&node{}).set("type", "string")))
	}
	return wrapper(md.FullName())
}

// wrappers are the wrapper types and the scalar kinds they wrap.
var wrappers = map[protoreflect.FullName]protoreflect.Kind{
	"google.protobuf.DoubleValue": protoreflect.DoubleKind,
	"google.protobuf.FloatValue":  protoreflect.FloatKind,
	"google.protobuf.Int64Value":  protoreflect.Int64Kind,
	"google.protobuf.UInt64Value": protoreflect.Uint64Kind,
	"google.protobuf.Int32Value":  protoreflect.Int32Kind,
	"google.protobuf.UInt32Value": protoreflect.Uint32Kind,
	"google.protobuf.BoolValue":   protoreflect.BoolKind,
	"google.protobuf.StringValue": protoreflect.StringKind,
	"google.protobuf.BytesValue":  protoreflect.BytesKind,
}

// wrapper returns the schema of a wrapper type (its wrapped scalar), or nil.
func wrapper(name protoreflect.FullName) *node {
	if k, ok := wrappers[name]; ok {
		return scalar(k)
	}
	return nil
}

// comment returns the leading comment of a descriptor on one line, or "".
func comment(d protoreflect.Descriptor) string {
	loc := d.ParentFile().SourceLocations().ByDescriptor(d)
	return strings.Join(strings.Fields(loc.LeadingComments), " ")
}

// node is a JSON object whose members keep the order they were set in. Values are
// strings, []string, int, *node and []*node.
type node struct {
	keys []string
	vals []any
}

// set adds (or replaces) a member and returns n.
func (n *node) set(key string, v any) *node {
	if i := slices.Index(n.keys, key); i >= 0 {
		n.vals[i] = v
		return n
	}
	n.keys = append(n.keys, key)
	n.vals = append(n.vals, v)
	return n
}

// merge sets every member of o on n and returns n.
func (n *node) merge(o *node) *node {
	for i, k := range o.keys {
		n.set(k, o.vals[i])
	}
	return n
}

// appendTo writes n as JSON.
func (n *node) appendTo(dst []byte) []byte {
	dst = append(dst, '{')
	for i, k := range n.keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonrpc.AppendString(dst, k)
		dst = append(dst, ':')
		dst = appendValue(dst, n.vals[i])
	}
	return append(dst, '}')
}

func appendValue(dst []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		return jsonrpc.AppendString(dst, v)
	case int:
		return strconv.AppendInt(dst, int64(v), 10)
	case *node:
		return v.appendTo(dst)
	case []string:
		dst = append(dst, '[')
		for i, s := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonrpc.AppendString(dst, s)
		}
		return append(dst, ']')
	case []*node:
		dst = append(dst, '[')
		for i, s := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = s.appendTo(dst)
		}
		return append(dst, ']')
	default:
		return append(dst, "null"...)
	}
}
