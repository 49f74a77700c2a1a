package transcode

import (
	"encoding/base64"
	"math"
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// decoder is the state of one wire → JSON transcoding. For each message it first indexes
// the wire bytes, recording where each known field occurs, then writes the fields in
// declaration order, which is the order protojson writes them in. Merging follows
// proto.Unmarshal: the last scalar wins, message occurrences merge, a oneof keeps its
// last member, repeated fields accept packed and unpacked occurrences alike.
type decoder struct {
	out       []byte
	plan      *Plan
	emitUnpop bool
	inAny     int // > 0 inside google.protobuf.Any
	occs      []occ
	slots     []slot
	ents      []entry
}

// occ is one occurrence of a field on the wire: the value of a varint or fixed field,
// else the span of a length-delimited or group value within the message's bytes.
type occ struct {
	v          uint64
	start, end int32
	next       int32 // the field's next occurrence, or -1
	wt         protowire.Type
}

// slot holds the occurrences of one field, or for a oneof (in slots after the fields)
// the index of the member set last in head.
type slot struct {
	head, tail int32
}

var decoders = sync.Pool{New: func() any { return new(decoder) }}

func getDecoder(p *Plan, dst []byte) *decoder {
	d := decoders.Get().(*decoder)
	d.out, d.plan, d.emitUnpop, d.inAny = dst, p, p.opts.EmitUnpopulated, 0
	return d
}

func putDecoder(d *decoder) {
	d.out, d.plan = nil, nil
	d.occs, d.slots, d.ents = d.occs[:0], d.slots[:0], d.ents[:0]
	decoders.Put(d)
}

// DecodeWire appends to dst the proto3 JSON form of the message whose wire encoding is
// wire, as protojson.Marshal writes it after proto.Unmarshal (lowerCamel names, fields in
// declaration order). Unknown fields are skipped. On error it returns dst unchanged and
// a *PathError.
func (p *Plan) DecodeWire(dst, wire []byte) ([]byte, error) {
	d := getDecoder(p, dst)
	err := d.message(p.root, wire, recursionLimit)
	out := d.out
	putDecoder(d)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// DecodeField appends to dst the JSON value of the one field named name (JSON or proto
// name) of the message whose wire encoding is wire, for unwrapping a response such as
// {"result": 3} to a bare 3. The rest of the message is checked as DecodeWire checks it,
// but not written. An absent field is written as EmitUnpopulated would write it, with
// null for a member of a oneof.
func (p *Plan) DecodeField(dst, wire []byte, name string) ([]byte, error) {
	m := p.root
	i := m.names.lookup(name)
	if i < 0 || m.wkt != wktNone && m.wkt != wktEmpty {
		return dst, fail("no field named " + name)
	}
	d := getDecoder(p, dst)
	err := d.field(m, &m.fields[i], wire, recursionLimit)
	out := d.out
	putDecoder(d)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// field writes the value of field f of the root message m.
func (d *decoder) field(m *message, f *field, b []byte, depth int) *PathError {
	depth--
	base, obase, err := d.index(m, b, depth)
	if err != nil {
		return err
	}
	for i := range m.fields {
		if g := &m.fields[i]; g != f && d.present(m, base, i) {
			if err := d.validateField(g, b, d.slots[base+i], depth); err != nil {
				return err.inField([]byte(g.jsonName))
			}
		}
	}
	mark := len(d.out)
	wrote := false
	if d.present(m, base, f.index) {
		wrote, err = d.value(f, b, d.slots[base+f.index], depth)
		if err != nil {
			return err.inField([]byte(f.jsonName))
		}
	}
	if !wrote {
		d.out = append(d.out[:mark], f.zero...)
	}
	d.slots, d.occs = d.slots[:base], d.occs[:obase]
	return nil
}

// message writes the JSON form of message m encoded in b.
func (d *decoder) message(m *message, b []byte, depth int) *PathError {
	if depth--; depth < 0 {
		return fail(reasonDepth)
	}
	base, obase, err := d.index(m, b, depth)
	if err != nil {
		return err
	}
	if m.wkt != wktNone && m.wkt != wktEmpty {
		err = d.wellKnown(m, b, base, depth)
	} else {
		d.out = append(d.out, '{')
		err = d.fields(m, b, base, depth, len(d.out))
		d.out = append(d.out, '}')
	}
	d.slots, d.occs = d.slots[:base], d.occs[:obase]
	return err
}

// present reports whether field i of m, indexed at base, has a value.
func (d *decoder) present(m *message, base, i int) bool {
	f := &m.fields[i]
	if d.slots[base+i].tail < 0 {
		return false
	}
	return f.oneof < 0 || d.slots[base+len(m.fields)+f.oneof].head == off32(i)
}

// fields writes the members of message m indexed at base; members written so far
// start at start.
func (d *decoder) fields(m *message, b []byte, base, depth, start int) *PathError {
	for i := range m.fields {
		f := &m.fields[i]
		if !d.present(m, base, i) {
			if f.required && d.inAny == 0 { // protojson does not check inside Any
				return fail("required field is not set").inField([]byte(f.jsonName))
			}
			if d.emitUnpop && !f.inOneof {
				d.out = append(d.comma(start), f.key...)
				d.out = append(d.out, f.zero...)
			}
			continue
		}
		mark := len(d.out)
		d.out = append(d.comma(start), f.key...)
		vmark := len(d.out)
		wrote, err := d.value(f, b, d.slots[base+i], depth)
		if err != nil {
			return err.inField([]byte(f.jsonName))
		}
		if !wrote {
			if d.emitUnpop {
				d.out = append(d.out[:vmark], f.zero...)
			} else {
				d.out = d.out[:mark]
			}
		}
	}
	return nil
}

// comma appends the separator before a member of an object whose members start at start.
func (d *decoder) comma(start int) []byte {
	if len(d.out) > start {
		return append(d.out, ',')
	}
	return d.out
}

// value writes the value of field f from its occurrences in s. It reports false, having
// written nothing meaningful, when the value is unpopulated: a zero scalar without
// presence or an empty list.
func (d *decoder) value(f *field, b []byte, s slot, depth int) (bool, *PathError) {
	switch {
	case f.card == cardMap:
		return true, d.mapValue(f, b, s, depth)
	case f.card == cardList:
		return d.list(f, b, s, depth)
	case f.isMessage():
		return true, d.messageValue(f.msg, b, s, depth)
	}
	o := &d.occs[s.tail]
	if !f.presence && isZero(f, o) {
		return false, nil
	}
	return true, d.scalar(f, o.v, b[o.start:o.end])
}

// isZero reports whether a scalar occurrence of field f holds the zero value.
func isZero(f *field, o *occ) bool {
	switch {
	case o.wt == protowire.BytesType:
		return o.start == o.end
	case f.kind == protoreflect.EnumKind || is32(f.kind):
		return low32(o.v) == 0 // the wire value is truncated to 32 bits
	}
	return o.v == 0
}

// messageValue writes the message made by merging the occurrences in s.
func (d *decoder) messageValue(m *message, b []byte, s slot, depth int) *PathError {
	first := &d.occs[s.head]
	if first.next < 0 {
		return d.message(m, b[first.start:first.end], depth)
	}
	// proto.Unmarshal parses each occurrence on its own before merging: check each, so
	// that a truncated occurrence cannot be completed by the next.
	var merged []byte
	for o := s.head; o >= 0; o = d.occs[o].next {
		v := b[d.occs[o].start:d.occs[o].end]
		if err := validate(m, v, depth); err != nil {
			return err
		}
		merged = append(merged, v...)
	}
	return d.message(m, merged, depth)
}

// list writes the elements of repeated field f; it reports false if there are none.
func (d *decoder) list(f *field, b []byte, s slot, depth int) (bool, *PathError) {
	d.out = append(d.out, '[')
	start, n := len(d.out), 0
	for o := s.head; o >= 0; o = d.occs[o].next {
		oc := d.occs[o]
		v := b[oc.start:oc.end]
		var err *PathError
		k := 1
		switch {
		case f.isMessage():
			d.out = d.comma(start)
			err = d.message(f.msg, v, depth)
		case oc.wt == protowire.BytesType && f.wt != protowire.BytesType:
			k, err = d.packed(f, v, start)
		default:
			d.out = d.comma(start)
			err = d.scalar(f, oc.v, v)
		}
		if err != nil {
			return false, err.inIndex(n + k - 1)
		}
		n += k
	}
	d.out = append(d.out, ']')
	return n > 0, nil
}

// packed writes the elements of a packed occurrence of field f and returns their count.
func (d *decoder) packed(f *field, b []byte, start int) (int, *PathError) {
	n := 0
	for len(b) > 0 {
		var v uint64
		var k int
		switch f.wt {
		case protowire.Fixed32Type:
			var x uint32
			x, k = protowire.ConsumeFixed32(b)
			v = uint64(x)
		case protowire.Fixed64Type:
			v, k = protowire.ConsumeFixed64(b)
		default:
			v, k = protowire.ConsumeVarint(b)
		}
		if k < 0 {
			return n + 1, fail(reasonWire)
		}
		b = b[k:]
		d.out = d.comma(start)
		n++
		if err := d.scalar(f, v, nil); err != nil {
			return n, err
		}
	}
	return n, nil
}

// scalar writes a scalar of field f's kind: v for numbers, s for strings and bytes.
func (d *decoder) scalar(f *field, v uint64, s []byte) *PathError {
	out := d.out
	switch f.kind {
	case protoreflect.BoolKind:
		if v != 0 {
			out = append(out, "true"...)
		} else {
			out = append(out, "false"...)
		}
	case protoreflect.Int32Kind:
		out = appendInt(out, int64(trunc32(v)))
	case protoreflect.Sint32Kind:
		out = appendInt(out, int64(narrow(protowire.DecodeZigZag(v&math.MaxUint32))))
	case protoreflect.Sfixed32Kind:
		out = appendInt(out, int64(trunc32(v)))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		out = appendInt(out, int64(low32(v)))
	case protoreflect.Int64Kind, protoreflect.Sfixed64Kind:
		out = append(appendInt(append(out, '"'), signed(v)), '"')
	case protoreflect.Sint64Kind:
		out = append(appendInt(append(out, '"'), protowire.DecodeZigZag(v)), '"')
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		out = append(appendUint(append(out, '"'), v), '"')
	case protoreflect.FloatKind:
		out = appendFloat(out, float64(math.Float32frombits(low32(v))), 32)
	case protoreflect.DoubleKind:
		out = appendFloat(out, math.Float64frombits(v), 64)
	case protoreflect.EnumKind:
		out = appendEnum(out, f.enum, trunc32(v))
	case protoreflect.StringKind:
		var ok bool
		if out, ok = appendJSONString(out, s); !ok {
			d.out = out
			return fail(reasonUTF8)
		}
	case protoreflect.BytesKind:
		out = append(out, '"')
		out = base64.StdEncoding.AppendEncode(out, s)
		out = append(out, '"')
	}
	d.out = out
	return nil
}

// index records the occurrences of m's known fields in b, pushing one slot per field and
// oneof from base and the occurrences from obase.
func (d *decoder) index(m *message, b []byte, depth int) (base, obase int, err *PathError) {
	base, obase = len(d.slots), len(d.occs)
	if len(b) > math.MaxInt32 {
		return base, obase, fail("message too large")
	}
	for range len(m.fields) + len(m.oneofs) {
		d.slots = append(d.slots, slot{-1, -1})
	}
	for i := 0; i < len(b); {
		num, wt, n := protowire.ConsumeTag(b[i:])
		if n < 0 || num > protowire.MaxValidNumber {
			return base, obase, fail(reasonWire)
		}
		i += n
		if fi := m.fieldByNum(num); fi >= 0 && accepts(&m.fields[fi], wt) {
			f := &m.fields[fi]
			o := occ{start: off32(i), next: -1, wt: wt}
			if n = consume(num, wt, b[i:], &o); n < 0 {
				return base, obase, fail(reasonWire).inField([]byte(f.jsonName))
			}
			if f.kind == protoreflect.StringKind && f.utf8 && !utf8.Valid(b[o.start:o.end]) {
				return base, obase, fail(reasonUTF8).inField([]byte(f.jsonName))
			}
			if err := d.record(m, fi, base, o, b, depth); err != nil {
				return base, obase, err.inField([]byte(f.jsonName))
			}
			i += n
			continue
		}
		if n = protowire.ConsumeFieldValue(num, wt, b[i:]); n < 0 {
			return base, obase, fail(reasonWire)
		}
		i += n
	}
	return base, obase, nil
}

// accepts reports whether an occurrence of wire type wt is a value of field f; any
// other is an unknown field, as in proto.Unmarshal.
func accepts(f *field, wt protowire.Type) bool {
	switch {
	case wt == f.wt:
		return true
	case f.card == cardList && wt == protowire.BytesType:
		return f.wt != protowire.StartGroupType // a packed list of scalars
	}
	return false
}

// consume reads the value of wire type wt at b into o and returns its length.
func consume(num protowire.Number, wt protowire.Type, b []byte, o *occ) int {
	var n int
	switch wt {
	case protowire.VarintType:
		o.v, n = protowire.ConsumeVarint(b)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(b)
		o.v = uint64(v)
	case protowire.Fixed64Type:
		o.v, n = protowire.ConsumeFixed64(b)
	case protowire.BytesType:
		var v []byte
		v, n = protowire.ConsumeBytes(b)
		o.start += off32(n - len(v))
		o.end = o.start + off32(len(v))
		return n
	case protowire.StartGroupType:
		var v []byte
		v, n = protowire.ConsumeGroup(num, b)
		o.end = o.start + off32(len(v))
		return n
	default:
		return -1
	}
	o.end = o.start
	return n
}

// record adds occurrence o of field fi to the slots of m at base.
func (d *decoder) record(m *message, fi, base int, o occ, b []byte, depth int) *PathError {
	f := &m.fields[fi]
	s := &d.slots[base+fi]
	if f.oneof >= 0 {
		w := &d.slots[base+len(m.fields)+f.oneof].head
		if *w != off32(fi) {
			if *w >= 0 {
				// proto.Unmarshal parsed the member being replaced: check it as it would.
				prev := &m.fields[*w]
				if err := d.validateField(prev, b, d.slots[base+int(*w)], depth); err != nil {
					return err
				}
			}
			*s, *w = slot{-1, -1}, off32(fi)
		}
	}
	idx := off32(len(d.occs))
	d.occs = append(d.occs, o)
	if s.tail >= 0 && (f.card != cardSingular || f.isMessage()) {
		d.occs[s.tail].next = idx
	} else {
		s.head = idx
	}
	s.tail = idx
	return nil
}

// appendUint appends the decimal form of v.
func appendUint(b []byte, v uint64) []byte {
	if v < 10 {
		return append(b, byte('0'+v))
	}
	var buf [20]byte
	i := len(buf)
	for v > 0 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, buf[i:]...)
}
