package transcode

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// denseNumbers is the largest field number for which a message looks fields up by
// number in a slice rather than a map.
const denseNumbers = 512

// wkt names a well-known type with its own JSON mapping.
type wkt uint8

const (
	wktNone wkt = iota
	wktAny
	wktTimestamp
	wktDuration
	wktStruct
	wktValue
	wktListValue
	wktFieldMask
	wktEmpty
	wktWrapper
)

// wellKnownOf returns the well-known type md is, if any.
func wellKnownOf(md protoreflect.MessageDescriptor) wkt {
	name := md.FullName()
	if name.Parent() != "google.protobuf" {
		return wktNone
	}
	switch name.Name() {
	case "Any":
		return wktAny
	case "Timestamp":
		return wktTimestamp
	case "Duration":
		return wktDuration
	case "Struct":
		return wktStruct
	case "Value":
		return wktValue
	case "ListValue":
		return wktListValue
	case "FieldMask":
		return wktFieldMask
	case "Empty":
		return wktEmpty
	case "BoolValue", "Int32Value", "Int64Value", "UInt32Value", "UInt64Value",
		"FloatValue", "DoubleValue", "StringValue", "BytesValue":
		return wktWrapper
	}
	return wktNone
}

// message is the compiled form of one message type. It is immutable once published.
type message struct {
	desc     protoreflect.MessageDescriptor
	wkt      wkt
	fields   []field   // in declaration order, which is protojson's output order
	names    nameTable // JSON and proto names → index in fields
	byNum    []int32   // field number → index+1, when numbers are small
	sparse   map[protowire.Number]int32
	byNumber []int32  // indexes of fields in field-number order (positional params)
	canon    []int32  // index → rank in deterministic marshal order
	oneofs   []string // names of the oneofs, synthetic ones included
	required []int32  // indexes of proto2 required fields
	bits     int      // size of the seen set: fields, oneofs, and fields set if required
}

// fieldByNum returns the index of the field numbered num, or -1.
func (m *message) fieldByNum(num protowire.Number) int {
	if m.byNum != nil {
		if int(num) < len(m.byNum) {
			return int(m.byNum[num]) - 1
		}
		return -1
	}
	if i, ok := m.sparse[num]; ok {
		return int(i)
	}
	return -1
}

// card is a field's cardinality.
type card uint8

const (
	cardSingular card = iota
	cardList
	cardMap
)

// field is the compiled form of one field.
type field struct {
	desc     protoreflect.FieldDescriptor
	jsonName string
	textName string
	key      []byte // `"jsonName":`
	tag      []byte // the tag of one value on the wire
	ptag     []byte // the tag of a packed list
	zero     []byte // JSON written for the field when it is unpopulated
	msg      *message
	enum     *enumInfo
	mapKey   *field
	mapVal   *field
	index    int
	num      protowire.Number
	kind     protoreflect.Kind
	wt       protowire.Type
	card     card
	oneof    int  // index of the real oneof holding the field, or -1
	inOneof  bool // in a oneof, synthetic (proto3 optional) or real
	presence bool // the field tracks presence, so a zero value is still written
	required bool // a proto2 required field
	packed   bool
	utf8     bool // strings must be valid UTF-8 on the wire
	nullOK   bool // JSON null is a value (google.protobuf.Value, NullValue), not "unset"
}

// isMessage reports whether the field's values are messages.
func (f *field) isMessage() bool {
	return f.kind == protoreflect.MessageKind || f.kind == protoreflect.GroupKind
}

// enumInfo is the compiled form of an enum type.
type enumInfo struct {
	names  nameTable // value name → index in numbers
	values []int32
	dense  [][]byte // number-min → quoted name, for compact enums
	sparse map[int32][]byte
	min    int32
	null   bool // google.protobuf.NullValue
}

// compileEnum compiles ed.
func compileEnum(ed protoreflect.EnumDescriptor) *enumInfo {
	vals := ed.Values()
	e := &enumInfo{null: ed.FullName() == "google.protobuf.NullValue"}
	names := make([]string, vals.Len())
	idx := make([]int32, vals.Len())
	e.values = make([]int32, vals.Len())
	lo, hi := int64(0), int64(0)
	for i := range vals.Len() {
		v := vals.Get(i)
		names[i], idx[i], e.values[i] = string(v.Name()), int32(i), int32(v.Number())
		if i == 0 || int64(v.Number()) < lo {
			lo = int64(v.Number())
		}
		if i == 0 || int64(v.Number()) > hi {
			hi = int64(v.Number())
		}
	}
	e.names = newNameTable(names, idx)
	quoted := func(n protoreflect.EnumNumber) []byte {
		return appendString(nil, string(vals.ByNumber(n).Name()))
	}
	if vals.Len() > 0 && hi-lo < 256 {
		e.min = int32(lo)
		e.dense = make([][]byte, hi-lo+1)
		for i := range vals.Len() {
			n := vals.Get(i).Number()
			if e.dense[int64(n)-lo] == nil {
				e.dense[int64(n)-lo] = quoted(n)
			}
		}
		return e
	}
	e.sparse = make(map[int32][]byte, vals.Len())
	for i := range vals.Len() {
		n := vals.Get(i).Number()
		if _, ok := e.sparse[int32(n)]; !ok {
			e.sparse[int32(n)] = quoted(n)
		}
	}
	return e
}

// name returns the quoted name of number n, or nil when n names no value.
func (e *enumInfo) name(n int32) []byte {
	if e.dense != nil {
		if i := int64(n) - int64(e.min); i >= 0 && i < int64(len(e.dense)) {
			return e.dense[i]
		}
		return nil
	}
	return e.sparse[n]
}

// zeroJSON returns the JSON protojson writes for f when EmitUnpopulated is set and f is
// not populated.
func zeroJSON(f *field) []byte {
	switch {
	case f.card == cardList:
		return []byte("[]")
	case f.card == cardMap:
		return []byte("{}")
	case f.presence:
		return []byte("null")
	}
	switch f.kind {
	case protoreflect.BoolKind:
		return []byte("false")
	case protoreflect.StringKind, protoreflect.BytesKind:
		return []byte(`""`)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return []byte(`"0"`)
	case protoreflect.EnumKind:
		return appendEnum(nil, f.enum, int32(f.desc.Default().Enum()))
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return []byte("null")
	}
	return []byte("0")
}

// appendEnum writes enum number n as protojson does: null for NullValue, else the name,
// else the number.
func appendEnum(out []byte, e *enumInfo, n int32) []byte {
	if e.null {
		return append(out, "null"...)
	}
	if name := e.name(n); name != nil {
		return append(out, name...)
	}
	return appendInt(out, int64(n))
}
