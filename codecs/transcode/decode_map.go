package transcode

import (
	"bytes"
	"math"
	"slices"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// entry is one map entry on the wire.
type entry struct {
	k          uint64 // the key in an order-preserving unsigned form, for non-string keys
	ks, ke     int32  // the span of a string key; ks < 0 for the empty default
	start, end int32  // the span of the whole entry
}

// mapValue writes the entries of map field f as a JSON object ordered by key, as
// protojson does; of entries with equal keys the last wins, as in proto.Unmarshal.
func (d *decoder) mapValue(f *field, b []byte, s slot, depth int) *PathError {
	ebase := len(d.ents)
	for o := s.head; o >= 0; o = d.occs[o].next {
		en, err := parseEntry(f, b, d.occs[o].start, d.occs[o].end, depth)
		if err != nil {
			return err
		}
		d.ents = append(d.ents, en)
	}
	n := len(d.ents) - ebase
	str := f.mapKey.kind == protoreflect.StringKind
	if str {
		slices.SortStableFunc(d.ents[ebase:], func(x, y entry) int {
			return bytes.Compare(entryKey(b, x), entryKey(b, y))
		})
	} else {
		slices.SortStableFunc(d.ents[ebase:], func(x, y entry) int { return cmpUint(x.k, y.k) })
	}
	d.out = append(d.out, '{')
	start := len(d.out)
	for i := range n {
		en := d.ents[ebase+i]
		if i+1 < n {
			next := d.ents[ebase+i+1]
			if str && bytes.Equal(entryKey(b, en), entryKey(b, next)) || !str && en.k == next.k {
				// A later entry replaces this one; proto.Unmarshal still parsed its value.
				if err := d.entryValue(f, b, en, depth, false); err != nil {
					return err
				}
				continue
			}
		}
		d.out = d.comma(start)
		if err := d.mapKey(f.mapKey, b, en); err != nil {
			return err
		}
		d.out = append(d.out, ':')
		if err := d.entryValue(f, b, en, depth, true); err != nil {
			return err.inKey(d.keyText(f.mapKey, b, en))
		}
	}
	d.out = append(d.out, '}')
	d.ents = d.ents[:ebase]
	return nil
}

// entryKey returns the bytes of a string key.
func entryKey(b []byte, en entry) []byte {
	if en.ks < 0 {
		return nil
	}
	return b[en.ks:en.ke]
}

// mapKey writes the key of en as a JSON string.
func (d *decoder) mapKey(kf *field, b []byte, en entry) *PathError {
	switch {
	case kf.kind == protoreflect.StringKind:
		var ok bool
		if d.out, ok = appendJSONString(d.out, entryKey(b, en)); !ok {
			return fail(reasonUTF8)
		}
		return nil
	case kf.kind == protoreflect.BoolKind && en.k != 0:
		d.out = append(d.out, `"true"`...)
	case kf.kind == protoreflect.BoolKind:
		d.out = append(d.out, `"false"`...)
	case isSigned(kf.kind):
		d.out = append(appendInt(append(d.out, '"'), signed(en.k^1<<63)), '"')
	default:
		d.out = append(appendUint(append(d.out, '"'), en.k), '"')
	}
	return nil
}

// keyText returns the key of en as its JSON member name, for an error path.
func (d *decoder) keyText(kf *field, b []byte, en entry) []byte {
	out := d.out
	defer func() { d.out = out }()
	d.out = nil
	_ = d.mapKey(kf, b, en)
	if len(d.out) < 2 {
		return nil
	}
	return bytes.Clone(d.out[1 : len(d.out)-1])
}

// sortKey maps the wire bits v of an integer or bool key of kind k to an unsigned value
// in the same order as the key.
func sortKey(k protoreflect.Kind, v uint64) uint64 {
	const flip = 1 << 63
	switch k {
	case protoreflect.BoolKind:
		if v != 0 {
			return 1
		}
		return 0
	case protoreflect.Int32Kind:
		return bitsOf(int64(trunc32(v))) ^ flip
	case protoreflect.Sint32Kind:
		return bitsOf(int64(narrow(protowire.DecodeZigZag(v&math.MaxUint32)))) ^ flip
	case protoreflect.Sfixed32Kind:
		return bitsOf(int64(trunc32(v))) ^ flip
	case protoreflect.Int64Kind, protoreflect.Sfixed64Kind:
		return v ^ flip
	case protoreflect.Sint64Kind:
		return bitsOf(protowire.DecodeZigZag(v)) ^ flip
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return uint64(low32(v))
	}
	return v
}

// parseEntry parses the map entry of field f at b[start:end], checking it as
// proto.Unmarshal does; values that are messages are checked when written.
func parseEntry(f *field, b []byte, start, end int32, depth int) (entry, *PathError) {
	kf, vf := f.mapKey, f.mapVal
	en := entry{ks: -1, start: start, end: end}
	if sortable := kf.kind != protoreflect.StringKind; sortable {
		en.k = sortKey(kf.kind, 0)
	}
	if depth-1 < 0 {
		return en, fail(reasonDepth)
	}
	for i := start; i < end; {
		num, wt, n := protowire.ConsumeTag(b[i:end])
		if n < 0 || num > protowire.MaxValidNumber {
			return en, fail(reasonWire)
		}
		i += off32(n)
		o := occ{start: i}
		var vf2 *field
		switch {
		case num == 1 && wt == kf.wt:
			vf2 = kf
		case num == 2 && wt == vf.wt:
			vf2 = vf
		}
		if vf2 == nil {
			if n = protowire.ConsumeFieldValue(num, wt, b[i:end]); n < 0 {
				return en, fail(reasonWire)
			}
			i += off32(n)
			continue
		}
		if n = consume(num, wt, b[i:end], &o); n < 0 {
			return en, fail(reasonWire)
		}
		if vf2.kind == protoreflect.StringKind && vf2.utf8 && !utf8.Valid(b[o.start:o.end]) {
			return en, fail(reasonUTF8)
		}
		if vf2 == kf {
			if kf.kind == protoreflect.StringKind {
				en.ks, en.ke = o.start, o.end
			} else {
				en.k = sortKey(kf.kind, o.v)
			}
		}
		i += off32(n)
	}
	return en, nil
}

// entryValue writes the value of entry en of map field f, or with write unset only
// checks a message value.
func (d *decoder) entryValue(f *field, b []byte, en entry, depth int, write bool) *PathError {
	depth-- // proto.Unmarshal counts the entry as a level
	vf := f.mapVal
	var last occ
	found := false
	var merged []byte
	for i := en.start; i < en.end; {
		num, wt, n := protowire.ConsumeTag(b[i:en.end])
		i += off32(n)
		if num != 2 || wt != vf.wt {
			i += off32(protowire.ConsumeFieldValue(num, wt, b[i:en.end]))
			continue
		}
		o := occ{start: i}
		i += off32(consume(num, wt, b[i:en.end], &o))
		if vf.isMessage() {
			if !write {
				if err := validate(vf.msg, b[o.start:o.end], depth); err != nil {
					return err
				}
				continue
			}
			if found && merged == nil {
				if err := validate(vf.msg, b[last.start:last.end], depth); err != nil {
					return err
				}
				merged = append(merged, b[last.start:last.end]...)
			}
			if found {
				if err := validate(vf.msg, b[o.start:o.end], depth); err != nil {
					return err
				}
			}
			if merged != nil {
				merged = append(merged, b[o.start:o.end]...)
			}
		}
		last, found = o, true
	}
	switch {
	case !write:
		return nil
	case vf.isMessage() && merged != nil:
		return d.message(vf.msg, merged, depth)
	case vf.isMessage() && found:
		return d.message(vf.msg, b[last.start:last.end], depth)
	case vf.isMessage():
		return d.message(vf.msg, nil, depth)
	case found:
		return d.scalar(vf, last.v, b[last.start:last.end])
	}
	return d.scalar(vf, 0, nil)
}

// validateField checks the occurrences of field f in s as proto.Unmarshal would have
// parsed them, writing nothing. Strings were checked when indexed.
func (d *decoder) validateField(f *field, b []byte, s slot, depth int) *PathError {
	for o := s.head; o >= 0; o = d.occs[o].next {
		oc := d.occs[o]
		if err := validateValue(f, oc.wt, b[oc.start:oc.end], depth); err != nil {
			return err
		}
	}
	return nil
}

// validateValue checks one occurrence v of field f with wire type wt.
func validateValue(f *field, wt protowire.Type, v []byte, depth int) *PathError {
	switch {
	case f.card == cardMap:
		en, err := parseEntry(f, v, 0, off32(len(v)), depth)
		if err == nil && f.mapVal.isMessage() {
			d := decoder{}
			err = d.entryValue(f, v, en, depth, false)
		}
		return err
	case f.isMessage():
		return validate(f.msg, v, depth)
	case wt == protowire.BytesType && f.wt != protowire.BytesType:
		for len(v) > 0 {
			var n int
			switch f.wt {
			case protowire.Fixed32Type:
				_, n = protowire.ConsumeFixed32(v)
			case protowire.Fixed64Type:
				_, n = protowire.ConsumeFixed64(v)
			default:
				_, n = protowire.ConsumeVarint(v)
			}
			if n < 0 {
				return fail(reasonWire)
			}
			v = v[n:]
		}
	}
	return nil
}

// validate checks the wire bytes b of a message of type m as proto.Unmarshal would
// parse them, writing nothing.
func validate(m *message, b []byte, depth int) *PathError {
	if depth--; depth < 0 {
		return fail(reasonDepth)
	}
	for i := 0; i < len(b); {
		num, wt, n := protowire.ConsumeTag(b[i:])
		if n < 0 || num > protowire.MaxValidNumber {
			return fail(reasonWire)
		}
		i += n
		if fi := m.fieldByNum(num); fi >= 0 && accepts(&m.fields[fi], wt) {
			f := &m.fields[fi]
			o := occ{start: off32(i)}
			if n = consume(num, wt, b[i:], &o); n < 0 {
				return fail(reasonWire).inField([]byte(f.jsonName))
			}
			v := b[o.start:o.end]
			if f.kind == protoreflect.StringKind && f.utf8 && !utf8.Valid(v) {
				return fail(reasonUTF8).inField([]byte(f.jsonName))
			}
			if err := validateValue(f, wt, v, depth); err != nil {
				return err.inField([]byte(f.jsonName))
			}
			i += n
			continue
		}
		if n = protowire.ConsumeFieldValue(num, wt, b[i:]); n < 0 {
			return fail(reasonWire)
		}
		i += n
	}
	return nil
}
