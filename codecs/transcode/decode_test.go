package transcode_test

import (
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// TestRandomDifferential builds random messages of every test type and checks that
// DecodeWire agrees with protojson.Marshal on their wire bytes (also damaged and
// concatenated), and that EncodeJSON agrees with protojson.Unmarshal on their JSON.
func TestRandomDifferential(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 30
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, name := range randomRoots {
		md := desc(t, name)
		var prev []byte
		for i := range n {
			m := newRandom(r, md)
			wire, err := proto.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			for _, emit := range []bool{false, true} {
				if d := decodeDiff(t, md, emit, wire); d != "" {
					t.Fatalf("%s #%d (emit=%v) wire %x: %s", name, i, emit, wire, d)
				}
			}
			bad := mutate(r, wire, prev)
			if d := decodeDiff(t, md, false, bad); d != "" {
				t.Fatalf("%s #%d damaged wire %x: %s", name, i, bad, d)
			}
			prev = wire
			doc, err := protojson.MarshalOptions{Resolver: schemaTypes}.Marshal(m)
			if err != nil {
				continue
			}
			if d := encodeDiff(t, md, false, doc); d != "" {
				t.Fatalf("%s #%d JSON %s: %s", name, i, doc, d)
			}
			doc, err = protojson.MarshalOptions{Resolver: schemaTypes, EmitUnpopulated: true, UseProtoNames: r.IntN(2) == 0}.Marshal(m)
			if err == nil {
				if d := encodeDiff(t, md, false, doc); d != "" {
					t.Fatalf("%s #%d JSON %s: %s", name, i, doc, d)
				}
			}
		}
	}
}

// wire assembles test wire bytes.
type wire []byte

func (w wire) varint(n protowire.Number, v uint64) wire {
	return protowire.AppendVarint(protowire.AppendTag(w, n, protowire.VarintType), v)
}

func (w wire) bytes(n protowire.Number, b []byte) wire {
	return protowire.AppendBytes(protowire.AppendTag(w, n, protowire.BytesType), b)
}

func (w wire) fixed32(n protowire.Number, v uint32) wire {
	return protowire.AppendFixed32(protowire.AppendTag(w, n, protowire.Fixed32Type), v)
}

func (w wire) fixed64(n protowire.Number, v uint64) wire {
	return protowire.AppendFixed64(protowire.AppendTag(w, n, protowire.Fixed64Type), v)
}

func (w wire) raw(b ...byte) wire { return append(w, b...) }

func TestDecodeWireCases(t *testing.T) {
	nested := wire(nil).varint(1, 5).bytes(2, []byte("x"))
	cases := []struct {
		msg  string
		wire wire
	}{
		{"Scalars", nil},
		{"Scalars", wire(nil).varint(3, 1).varint(3, 2)},                         // last wins
		{"Scalars", wire(nil).varint(3, 0)},                                      // zero is unpopulated
		{"Scalars", wire(nil).fixed32(3, 1)},                                     // wrong wire type: unknown
		{"Scalars", wire(nil).varint(3, 1<<40)},                                  // int32 truncates
		{"Scalars", wire(nil).varint(7, 1<<40|3)},                                // sint32 truncates
		{"Scalars", wire(nil).varint(13, 2)},                                     // bool from 2
		{"Scalars", wire(nil).varint(16, 99).varint(17, 1)},                      // unknown enum, alias
		{"Scalars", wire(nil).varint(16, 1<<63)},                                 // enum truncates
		{"Scalars", wire(nil).bytes(14, []byte("\xff"))},                         // invalid UTF-8
		{"Scalars", wire(nil).bytes(14, []byte("\xff")).bytes(14, []byte("ok"))}, // checked though replaced
		{"Scalars", wire(nil).bytes(14, []byte("a\x00\x1f\"\\\u2028<>&é"))},      // escapes
		{"Scalars", wire(nil).fixed64(1, 0x8000000000000000)},                    // -0
		{"Scalars", wire(nil).fixed64(1, 0x7ff8000000000001)},                    // NaN
		{"Scalars", wire(nil).fixed32(2, 0x7f800000)},                            // +Inf
		{"Scalars", wire(nil).varint(1000, 1).bytes(1001, nil).fixed32(1002, 1)}, // unknown fields
		{"Scalars", wire(nil).raw(0x0b, 0x0c)},                                   // empty group, unknown
		{"Scalars", wire(nil).raw(0x0b)},                                         // open group
		{"Scalars", wire(nil).raw(0x0c)},                                         // stray end group
		{"Scalars", wire(nil).raw(0x00, 0x01)},                                   // field number 0
		{"Scalars", wire(nil).raw(0x0e, 0x01)},                                   // wire type 6
		{"Scalars", wire(nil).raw(0xf8, 0xff, 0xff, 0xff, 0x0f, 0x01)},           // max field number
		{"Scalars", wire(nil).raw(0x80, 0x80, 0x80, 0x80, 0x10, 0x01)},           // field number beyond max
		{"Scalars", wire(nil).raw(0x18)},                                         // truncated varint
		{"Scalars", wire(nil).raw(0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)},
		{"Scalars", wire(nil).raw(0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02)},
		{"Scalars", wire(nil).raw(0x72, 0x05, 'a')},                               // truncated bytes
		{"Repeateds", wire(nil).varint(3, 1).bytes(3, []byte{2, 3}).varint(3, 4)}, // packed and not
		{"Repeateds", wire(nil).bytes(3, nil)},                                    // empty packed
		{"Repeateds", wire(nil).bytes(3, []byte{0x80})},                           // bad packed varint
		{"Repeateds", wire(nil).bytes(9, []byte{1, 2, 3})},                        // packed fixed32 short
		{"Repeateds", wire(nil).bytes(14, []byte("a")).bytes(14, nil)},
		{"Repeateds", wire(nil).bytes(17, nested).bytes(17, nil).bytes(17, []byte{0xff})},
		{"Repeateds", wire(nil).varint(18, 7).bytes(18, []byte{8})},
		{"Everything", wire(nil).bytes(7, nested).bytes(7, wire(nil).varint(1, 6))}, // merge
		{"Everything", wire(nil).bytes(7, []byte{0x08}).bytes(7, []byte{0x05})},     // halves of a varint
		{"Everything", wire(nil).bytes(7, wire(nil).bytes(3, nested)).bytes(7, wire(nil).bytes(3, wire(nil).bytes(2, []byte("y"))))},
		{"Everything", wire(nil).varint(100, 1).varint(50, 2).bytes(9, []byte("c"))},
		{"Oneofs", wire(nil).varint(1, 5).bytes(2, []byte("s"))},                             // last member wins
		{"Oneofs", wire(nil).bytes(2, []byte("s")).varint(1, 0)},                             // zero member present
		{"Oneofs", wire(nil).bytes(3, nested).varint(1, 5).bytes(3, wire(nil).varint(1, 7))}, // no merge across
		{"Oneofs", wire(nil).bytes(3, nested).bytes(3, wire(nil).varint(1, 7))},              // merge
		{"Oneofs", wire(nil).bytes(3, []byte{0xff}).varint(1, 5)},                            // replaced but bad
		{"Oneofs", wire(nil).bytes(5, nil)},                                                  // Value without kind
		{"Oneofs", wire(nil).bytes(5, wire(nil).varint(1, 0)).varint(6, 3).varint(8, 1).fixed64(9, 0)},
		{"Oneofs", wire(nil).bytes(11, wire(nil).varint(1, 1<<62))},              // Timestamp out of range
		{"Oneofs", wire(nil).bytes(11, wire(nil).varint(1, 1<<62)).varint(1, 1)}, // replaced: fine
		{"Maps", wire(nil).bytes(1, wire(nil).bytes(1, []byte("k")).bytes(2, []byte("v")))},
		{"Maps", wire(nil).bytes(1, wire(nil).bytes(2, []byte("v")).bytes(1, []byte("k")))},
		{"Maps", wire(nil).bytes(1, nil)}, // default key and value
		{"Maps", wire(nil).bytes(1, wire(nil).bytes(1, []byte("k")).bytes(2, []byte("1"))).bytes(1, wire(nil).bytes(1, []byte("k")).bytes(2, []byte("2")))},
		{"Maps", wire(nil).bytes(2, wire(nil).varint(1, 3)).bytes(2, wire(nil).varint(1, 1<<32|3).varint(2, 9)).bytes(2, wire(nil).varint(1, 1<<31))},
		{"Maps", wire(nil).bytes(6, wire(nil).varint(1, 1).varint(2, 99)).bytes(6, wire(nil).varint(1, 2))},
		{"Maps", wire(nil).bytes(12, wire(nil).varint(1, 5)).bytes(12, wire(nil).varint(1, 0))},
		{"Maps", wire(nil).bytes(13, wire(nil).bytes(1, []byte("m")).bytes(2, nested).bytes(2, wire(nil).varint(1, 1)))},
		{"Maps", wire(nil).bytes(13, wire(nil).bytes(1, []byte("m")).bytes(2, []byte{0xff})).bytes(13, wire(nil).bytes(1, []byte("m")))},
		{"Maps", wire(nil).bytes(13, wire(nil).bytes(1, []byte("m")))},
		{"Maps", wire(nil).bytes(14, wire(nil).bytes(1, []byte("v")))}, // Value without kind
		{"Maps", wire(nil).bytes(1, wire(nil).bytes(1, []byte("\xff")))},
		{"Maps", wire(nil).bytes(1, wire(nil).bytes(1, []byte("k")).varint(1, 3))},           // key with wrong type
		{"Maps", wire(nil).bytes(1, wire(nil).bytes(1, []byte("k")).varint(3, 3).raw(0x0c))}, // bad entry
		{"Maps", wire(nil).varint(1, 1)}, // map with wrong type
		{"Maps", wire(nil).bytes(11, wire(nil).fixed64(1, 1<<63).fixed64(2, 1)).bytes(11, wire(nil).fixed64(1, 5))},
		{"WellKnown", wire(nil).bytes(2, wire(nil).varint(1, 1).varint(2, 5e8))},
		{"WellKnown", wire(nil).bytes(2, wire(nil).varint(2, 1e9))},
		{"WellKnown", wire(nil).bytes(2, wire(nil).varint(2, 1<<63))},
		{"WellKnown", wire(nil).bytes(3, wire(nil).varint(1, 1).varint(2, uint64(1<<64-5)))},
		{"WellKnown", wire(nil).bytes(3, wire(nil).varint(1, uint64(1<<64-1)).varint(2, uint64(1<<64-5)))},
		{"WellKnown", wire(nil).bytes(3, wire(nil).varint(2, 1e6))},
		{"WellKnown", wire(nil).bytes(5, wire(nil).fixed64(2, 0x7ff0000000000000))},
		{"WellKnown", wire(nil).bytes(5, wire(nil).varint(1, 5).bytes(3, []byte("s")))},
		{"WellKnown", wire(nil).bytes(7, wire(nil).bytes(1, []byte("foo_bar")).bytes(1, []byte("a.b")))},
		{"WellKnown", wire(nil).bytes(7, wire(nil).bytes(1, []byte("fooBar")))},
		{"WellKnown", wire(nil).bytes(7, wire(nil).bytes(1, []byte("foo__bar")))},
		{"WellKnown", wire(nil).bytes(7, wire(nil).bytes(1, []byte("_foo")))},
		{"WellKnown", wire(nil).bytes(7, wire(nil).bytes(1, nil))},
		{"WellKnown", wire(nil).bytes(1, wire(nil).bytes(2, []byte{1}))}, // value, no type
		{"WellKnown", wire(nil).bytes(1, wire(nil).bytes(1, []byte("type.googleapis.com/x.Nope")))},
		{"WellKnown", wire(nil).bytes(1, wire(nil).bytes(1, []byte("type.googleapis.com/transcode.test.Nested")).bytes(2, []byte{0xff}))},
		{"WellKnown", wire(nil).bytes(1, wire(nil).bytes(1, []byte("type.googleapis.com/transcode.test.Nested")).bytes(2, nested))},
		{"WellKnown", wire(nil).bytes(1, wire(nil).bytes(1, []byte("type.googleapis.com/google.protobuf.Empty")))},
		{"WellKnown", wire(nil).bytes(1, wire(nil).bytes(1, []byte("type.googleapis.com/google.protobuf.Value")))},
		{"WellKnown", wire(nil).bytes(1, wire(nil).bytes(1, []byte("type.googleapis.com/google.protobuf.Struct")))},
		{"WellKnown", wire(nil).bytes(10, nil).bytes(16, nil).bytes(8, nil).bytes(6, nil).bytes(4, nil)},
		{"WellKnown", wire(nil).varint(22, 5).bytes(23, []byte{0, 1, 2})},
		{"transcode.test2.P2", wire(nil).bytes(2, []byte("\xff"))},                        // proto2: refused by protojson
		{"transcode.test2.P2", wire(nil).bytes(2, []byte("\xff")).bytes(2, []byte("ok"))}, // replaced: fine
		{"transcode.test2.P2", wire(nil).varint(1, 0).varint(9, 7)},                       // presence, closed enum
		{"transcode.test2.P2", wire(nil).raw(0x33, 0x38, 0x01, 0x34)},                     // group
		{"transcode.test2.P2", wire(nil).raw(0x33, 0x38, 0x01)},                           // open group
		{"transcode.test2.P2", wire(nil).raw(0x5b, 0x60, 0x01, 0x5c, 0x5b, 0x5c)},         // repeated group
		{"transcode.test2.P2", wire(nil).varint(4, 1).bytes(5, []byte{2, 3})},             // packed either way
		{"transcode.test2.P2", wire(nil).bytes(6, nil)},                                   // group as bytes: unknown
		{"transcode.test2.P2", wire(nil).varint(100, 1)},                                  // extension: unknown
		{"transcode.test2.Req", nil}, // required missing
		{"transcode.test2.Req", wire(nil).varint(1, 0)},
		{"transcode.test2.Req", wire(nil).varint(1, 0).bytes(2, nil)},
		{"Sparse", wire(nil).bytes(536870911, nested).bytes(100000, []byte("b"))},
		{"Wide", wire(nil).varint(65, 1).bytes(71, []byte("a")).bytes(72, []byte("b"))},
		{"google.protobuf.Value", nil},
		{"google.protobuf.Value", wire(nil).bytes(6, wire(nil).bytes(1, nil).bytes(1, wire(nil).varint(4, 1)))},
		{"google.protobuf.Struct", wire(nil).bytes(1, wire(nil).bytes(1, []byte("a")).bytes(2, wire(nil).bytes(3, []byte("x"))))},
		{"google.protobuf.Timestamp", wire(nil).varint(1, 1)},
		{"google.protobuf.Any", nil},
		{"google.protobuf.Int64Value", nil},
		{"google.protobuf.BytesValue", wire(nil).bytes(1, []byte{0xfb, 0xff})},
		{"transcode.test3.Ed", wire(nil).varint(11, 1).varint(1, 0).varint(2, 0)},
		{"transcode.test3.Ed", wire(nil).varint(11, 1).bytes(3, []byte("\xff")).bytes(4, []byte("ok"))},
		{"transcode.test3.Ed", wire(nil).varint(11, 1).bytes(4, []byte("\xff"))},
		{"transcode.test3.Ed", wire(nil).varint(11, 1).varint(5, 1).bytes(5, []byte{2}).varint(6, 3)},
		{"transcode.test3.Ed", wire(nil).varint(11, 1).raw(0x3b, 0x58, 0x02, 0x3c).raw(0x43, 0x58, 0x03, 0x44)},
		{"transcode.test3.Ed", wire(nil).varint(11, 1).bytes(7, wire(nil).varint(11, 2))},
		{"transcode.test3.Ed", wire(nil).varint(11, 1).varint(9, 5).varint(10, 7)},
		{"transcode.test3.Ed", wire(nil).varint(1, 1)},
	}
	for _, emit := range []bool{false, true} {
		for _, c := range cases {
			if d := decodeDiff(t, desc(t, c.msg), emit, c.wire); d != "" {
				t.Errorf("%s %x (emit=%v): %s", c.msg, []byte(c.wire), emit, d)
			}
		}
	}
}
