package transcode_test

import (
	"math"
	"math/rand/v2"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// randomMessage fills m with random values, favouring the edges of each kind. Well-known
// types get mostly valid contents, sometimes not.
func randomMessage(r *rand.Rand, m protoreflect.Message, depth int) {
	md := m.Descriptor()
	if fillWellKnown(r, m, depth) {
		return
	}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if r.IntN(3) == 0 {
			continue
		}
		switch {
		case fd.IsList():
			if (fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind) && depth <= 0 {
				continue
			}
			l := m.Mutable(fd).List()
			for range r.IntN(4) {
				if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
					e := l.NewElement()
					randomMessage(r, e.Message(), depth-1)
					l.Append(e)
				} else {
					l.Append(randomScalar(r, fd))
				}
			}
		case fd.IsMap():
			if fd.MapValue().Kind() == protoreflect.MessageKind && depth <= 0 {
				continue
			}
			mp := m.Mutable(fd).Map()
			for range r.IntN(4) {
				k := randomScalar(r, fd.MapKey()).MapKey()
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					v := mp.NewValue()
					randomMessage(r, v.Message(), depth-1)
					mp.Set(k, v)
				} else {
					mp.Set(k, randomScalar(r, fd.MapValue()))
				}
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			if depth > 0 {
				randomMessage(r, m.Mutable(fd).Message(), depth-1)
			}
		default:
			m.Set(fd, randomScalar(r, fd))
		}
	}
}

var (
	interestingInts = []int64{0, 1, -1, 2, 127, 128, -128, 255, 256, 1 << 20, math.MaxInt32, math.MinInt32,
		math.MaxInt32 + 1, math.MaxUint32, math.MaxInt64, math.MinInt64, -3}
	interestingFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1.5, 1e-7, 1e-6, 1e20, 1e21, 1e22,
		math.MaxFloat32, math.SmallestNonzeroFloat32, math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.NaN(), math.Inf(1), math.Inf(-1), 123456.789, -2.5e-10, 16777217}
	interestingStrings = []string{"", "a", "hello world", "é", "日本語", "😀", "\x00", "\x1f", "\"\\/", "\b\f\n\r\t",
		"\u2028\u2029", "<>&", "\x7f", "\ufffd", "a.b_c", "fooBar", "foo_bar", "foo.bar_baz", "1a"}
)

func randomScalar(r *rand.Rand, fd protoreflect.FieldDescriptor) protoreflect.Value {
	i := interestingInts[r.IntN(len(interestingInts))]
	if r.IntN(3) == 0 {
		i = int64(r.Uint64())
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(r.IntN(2) == 0)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(i))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(i)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(i))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(i))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(randomFloat(r)))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(randomFloat(r))
	case protoreflect.StringKind:
		s := interestingStrings[r.IntN(len(interestingStrings))]
		if fd.Syntax() == protoreflect.Proto2 && r.IntN(20) == 0 {
			s += "\xff" // proto2 does not check UTF-8 on the wire; protojson refuses it
		}
		return protoreflect.ValueOfString(s)
	case protoreflect.BytesKind:
		b := make([]byte, r.IntN(8))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		return protoreflect.ValueOfBytes(b)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		if r.IntN(5) == 0 {
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(int32(i)))
		}
		return protoreflect.ValueOfEnum(vals.Get(r.IntN(vals.Len())).Number())
	}
	panic("unexpected kind " + fd.Kind().String())
}

func randomFloat(r *rand.Rand) float64 {
	if r.IntN(3) == 0 {
		return math.Float64frombits(r.Uint64())
	}
	return interestingFloats[r.IntN(len(interestingFloats))]
}

// anyTypes are the types randomMessage packs into google.protobuf.Any.
var anyTypes = []string{"transcode.test.Nested", "transcode.test.Scalars", "transcode.test.Maps",
	"transcode.test.Oneofs", "google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.Struct",
	"google.protobuf.Value", "google.protobuf.Empty", "google.protobuf.Int64Value", "google.protobuf.Any",
	"google.protobuf.FieldMask", "google.protobuf.ListValue"}

// fillWellKnown fills a well-known type, reporting whether m is one.
func fillWellKnown(r *rand.Rand, m protoreflect.Message, depth int) bool {
	md := m.Descriptor()
	f := md.Fields().ByNumber
	switch md.FullName() {
	case "google.protobuf.Timestamp", "google.protobuf.Duration":
		secs := r.Int64N(2*253402300799) - 62135596800
		if md.Name() == "Duration" {
			secs = r.Int64N(2*315576000000) - 315576000000
		}
		nanos := int32(r.IntN(1e9))
		switch r.IntN(8) {
		case 0:
			secs = interestingInts[r.IntN(len(interestingInts))]
		case 1:
			nanos = int32(interestingInts[r.IntN(len(interestingInts))])
		case 2:
			nanos = 0
		case 3:
			nanos = nanos / 1e6 * 1e6
		}
		if md.Name() == "Duration" && secs < 0 && r.IntN(4) > 0 {
			nanos = -nanos
		}
		m.Set(f(1), protoreflect.ValueOfInt64(secs))
		m.Set(f(2), protoreflect.ValueOfInt32(nanos))
	case "google.protobuf.Value":
		if r.IntN(15) == 0 {
			return true // no kind: protojson refuses it
		}
		n := protoreflect.FieldNumber(1 + r.IntN(6))
		if depth <= 0 && n >= 5 {
			n = 3
		}
		fd := f(n)
		if n >= 5 {
			randomMessage(r, m.Mutable(fd).Message(), depth-1)
		} else {
			m.Set(fd, randomScalar(r, fd))
		}
	case "google.protobuf.FieldMask":
		l := m.Mutable(f(1)).List()
		for range r.IntN(3) {
			l.Append(protoreflect.ValueOfString(interestingStrings[r.IntN(len(interestingStrings))]))
		}
	case "google.protobuf.Any":
		if depth <= 0 || r.IntN(6) == 0 {
			return true
		}
		name := anyTypes[r.IntN(len(anyTypes))]
		mt, err := schemaTypes.FindMessageByName(protoreflect.FullName(name))
		if err != nil {
			panic(err)
		}
		em := mt.New()
		randomMessage(r, em, depth-1)
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(em.Interface())
		if err != nil {
			panic(err)
		}
		url := "type.googleapis.com/" + name
		if r.IntN(20) == 0 {
			url = "example.com/x/" + name
		}
		m.Set(f(1), protoreflect.ValueOfString(url))
		m.Set(f(2), protoreflect.ValueOfBytes(b))
	default:
		return false
	}
	return true
}

// randomRoots are the messages the random tests build.
var randomRoots = []string{"Everything", "WellKnown", "Maps", "Oneofs", "Repeateds", "Scalars", "Optionals",
	"Recursive", "Wide", "Sparse", "transcode.test2.P2", "google.protobuf.Struct", "google.protobuf.Value",
	"google.protobuf.Any", "google.protobuf.Timestamp", "transcode.test3.Ed"}

// newRandom returns a random message of a random root type and its descriptor.
func newRandom(r *rand.Rand, md protoreflect.MessageDescriptor) proto.Message {
	m := dynamicpb.NewMessage(md)
	randomMessage(r, m, 4)
	return m
}

// mutate damages wire bytes in one of several ways.
func mutate(r *rand.Rand, b []byte, other []byte) []byte {
	b = append([]byte(nil), b...)
	switch r.IntN(6) {
	case 0:
		if len(b) > 0 {
			b = b[:r.IntN(len(b))]
		}
	case 1:
		if len(b) > 0 {
			b[r.IntN(len(b))] = byte(r.Uint32())
		}
	case 2:
		if len(b) > 0 {
			b[r.IntN(len(b))] ^= 1 << r.IntN(8)
		}
	case 3:
		b = append(b, other...) // concatenation merges
	case 4:
		i := r.IntN(len(b) + 1)
		b = append(b[:i], append([]byte{byte(r.Uint32())}, b[i:]...)...)
	default:
		b = append(other, b...)
	}
	return b
}
