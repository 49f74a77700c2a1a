package transcode

import (
	"bytes"
	"encoding/binary"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// maxLinearKeys is how many keys a map may have before its duplicate check moves from
// comparing with each earlier key to a Go map.
const maxLinearKeys = 16

// mapKey is a key of an open map: its value for numeric and bool keys, else its bytes
// in encoder.keys.
type mapKey struct {
	v        uint64
	off, end int
}

// keySet is the set of keys of one open map, for the duplicate check.
type keySet struct {
	base  int // first key in encoder.mkeys
	mark  int // length of encoder.keys when the map opened
	large map[string]struct{}
}

// mapField encodes the JSON object at e.pos as the entries of map field f.
func (e *encoder) mapField(f *field, depth int) *PathError {
	e.ws()
	if !e.eat('{') {
		return e.want("object")
	}
	if e.canon > 0 {
		return e.canonMap(f, depth)
	}
	set := keySet{base: len(e.mkeys), mark: len(e.keys)}
	e.ws()
	if e.eat('}') {
		return nil
	}
	for {
		ks, ke, esc, err := e.name()
		if err != nil {
			return err
		}
		k, err := e.mapKeyAt(f.mapKey, ks, ke, esc)
		if err != nil {
			return err.inKey(e.keyName(ks, ke, esc))
		}
		if err := e.mapEntry(f, &set, k, depth); err != nil {
			return err.inKey(e.keyName(ks, ke, esc))
		}
		more, err := e.next('}')
		if err != nil {
			return err
		}
		if more {
			continue
		}
		e.mkeys, e.keys = e.mkeys[:set.base], e.keys[:set.mark]
		return nil
	}
}

// mapKeyAt parses the member name at in[ks:ke] as a key of kind kf. A string key is
// copied to e.keys.
func (e *encoder) mapKeyAt(kf *field, ks, ke int, esc bool) (mapKey, *PathError) {
	raw := e.in[ks:ke]
	if kf.kind == protoreflect.StringKind {
		off := len(e.keys)
		if esc {
			e.keys = unescape(e.keys, raw)
		} else {
			e.keys = append(e.keys, raw...)
		}
		return mapKey{off: off, end: len(e.keys)}, nil
	}
	name := raw
	if esc {
		e.sbuf = unescape(e.sbuf[:0], raw)
		name = e.sbuf
	}
	if kf.kind == protoreflect.BoolKind {
		switch string(name) {
		case "true":
			return mapKey{v: 1}, nil
		case "false":
			return mapKey{}, nil
		}
		return mapKey{}, fail("want map key true or false")
	}
	bits := 64
	if is32(kf.kind) {
		bits = 32
	}
	v, ok := parseDecimal(name, isSigned(kf.kind), bits)
	if !ok {
		return mapKey{}, fail("want integer map key")
	}
	return mapKey{v: v}, nil
}

// mapEntry checks key k against set and encodes the value at e.pos as the entry
// (k, value) of map field f. An entry whose value is an unknown enum name dropped under
// DiscardUnknown is left out, and its key not recorded, as protojson does.
func (e *encoder) mapEntry(f *field, set *keySet, k mapKey, depth int) *PathError {
	kf, vf := f.mapKey, f.mapVal
	str := kf.kind == protoreflect.StringKind
	if e.hasKey(set, str, k) {
		return fail("duplicate map key")
	}
	mark := len(e.out)
	e.out = append(e.out, f.tag...)
	pos := len(e.out)
	e.out = append(e.out, 0)
	e.out = append(e.out, kf.tag...)
	if str {
		e.out = protowire.AppendBytes(e.out, e.keys[k.off:k.end])
	} else {
		e.out = appendBits(e.out, kf.wt, wireBits(kf.kind, k.v))
	}
	var skip bool
	var err *PathError
	if vf.isMessage() {
		err = e.messageField(vf, depth)
	} else {
		skip, err = e.scalarField(vf, true)
	}
	if err != nil {
		return err
	}
	if skip {
		e.out = e.out[:mark]
		return nil
	}
	e.out = finishLen(e.out, pos)
	e.addKey(set, str, k)
	return nil
}

// wireBits converts the two's complement bits v of an integer of kind k to its wire bits.
func wireBits(k protoreflect.Kind, v uint64) uint64 {
	switch k {
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return protowire.EncodeZigZag(signed(v))
	case protoreflect.Sfixed32Kind:
		return uint64(low32(v))
	}
	return v
}

// hasKey reports whether k is in set.
func (e *encoder) hasKey(set *keySet, str bool, k mapKey) bool {
	if set.large != nil {
		_, ok := set.large[e.keyString(str, k)]
		return ok
	}
	for _, o := range e.mkeys[set.base:] {
		if str && bytes.Equal(e.keys[o.off:o.end], e.keys[k.off:k.end]) || !str && o.v == k.v {
			return true
		}
	}
	return false
}

// addKey adds k to set.
func (e *encoder) addKey(set *keySet, str bool, k mapKey) {
	if set.large == nil {
		if len(e.mkeys)-set.base < maxLinearKeys {
			e.mkeys = append(e.mkeys, k)
			return
		}
		set.large = make(map[string]struct{}, 4*maxLinearKeys)
		for _, o := range e.mkeys[set.base:] {
			set.large[e.keyString(str, o)] = struct{}{}
		}
		e.mkeys = e.mkeys[:set.base]
	}
	set.large[e.keyString(str, k)] = struct{}{}
}

func (e *encoder) keyString(str bool, k mapKey) string {
	if str {
		return string(e.keys[k.off:k.end])
	}
	return string(binary.LittleEndian.AppendUint64(nil, k.v))
}

// member is a member of an object that canonical mode reorders before encoding it.
type member struct {
	key    mapKey // map key
	field  int    // field index, for a message
	ks, ke int    // the raw member name
	pos    int    // where the value starts
	esc    bool
}

// canonObject encodes the members of the object at e.pos (after its '{') in the order
// deterministic proto.Marshal writes the fields, so that bytes inside Any match it.
func (e *encoder) canonObject(m *message, depth int, skipType bool) *PathError {
	base := len(e.members)
	e.ws()
	if !e.eat('}') {
		for {
			ks, ke, esc, err := e.name()
			if err != nil {
				return err
			}
			name := e.keyName(ks, ke, esc)
			i := m.names.lookupBytes(name)
			switch {
			case skipType && string(name) == typeKey:
				e.ws()
				_, _, _, err = e.str()
			case i < 0:
				err = e.unknown(depth)
				if err != nil {
					err = err.inField(name)
				}
			default:
				e.members = append(e.members, member{field: int(i), ks: ks, ke: ke, esc: esc, pos: e.pos})
				e.stack, err = e.skip(1<<31, e.stack)
			}
			if err != nil {
				return err
			}
			more, err := e.next('}')
			if err != nil {
				return err
			}
			if more {
				continue
			}
			break
		}
	}
	end := e.pos
	slices.SortStableFunc(e.members[base:], func(a, b member) int {
		return int(m.canon[a.field]) - int(m.canon[b.field])
	})
	seen := e.openSeen(m)
	for i := range len(e.members) - base {
		mb := e.members[base+i]
		e.pos = mb.pos
		if err := e.member(m, &m.fields[mb.field], &seen, depth); err != nil {
			return err.inField(e.keyName(mb.ks, mb.ke, mb.esc))
		}
	}
	e.closeSeen(seen)
	e.members, e.pos = e.members[:base], end
	return nil
}

// canonMap encodes the entries of the object at e.pos (after its '{') in key order, as
// deterministic proto.Marshal does.
func (e *encoder) canonMap(f *field, depth int) *PathError {
	base := len(e.members)
	set := keySet{mark: len(e.keys)}
	e.ws()
	if !e.eat('}') {
		for {
			ks, ke, esc, err := e.name()
			if err != nil {
				return err
			}
			k, err := e.mapKeyAt(f.mapKey, ks, ke, esc)
			if err != nil {
				return err.inKey(e.keyName(ks, ke, esc))
			}
			e.members = append(e.members, member{key: k, ks: ks, ke: ke, esc: esc, pos: e.pos})
			if e.stack, err = e.skip(1<<31, e.stack); err != nil {
				return err
			}
			more, err := e.next('}')
			if err != nil {
				return err
			}
			if more {
				continue
			}
			break
		}
	}
	end := e.pos
	e.sortKeys(f.mapKey.kind, e.members[base:])
	set.base = len(e.mkeys)
	n := len(e.members) - base
	for i := range n {
		mb := e.members[base+i]
		e.pos = mb.pos
		if err := e.mapEntry(f, &set, mb.key, depth); err != nil {
			return err.inKey(e.keyName(mb.ks, mb.ke, mb.esc))
		}
	}
	e.mkeys, e.keys = e.mkeys[:set.base], e.keys[:set.mark]
	e.members, e.pos = e.members[:base], end
	return nil
}

// sortKeys sorts map members by key as protobuf's deterministic order does: false before
// true, numbers ascending, strings bytewise. The sort is stable, so duplicates keep their
// document order.
func (e *encoder) sortKeys(k protoreflect.Kind, ms []member) {
	switch {
	case k == protoreflect.StringKind:
		slices.SortStableFunc(ms, func(a, b member) int {
			return bytes.Compare(e.keys[a.key.off:a.key.end], e.keys[b.key.off:b.key.end])
		})
	case isSigned(k):
		slices.SortStableFunc(ms, func(a, b member) int {
			return cmpInt(signed(a.key.v), signed(b.key.v))
		})
	default:
		slices.SortStableFunc(ms, func(a, b member) int {
			return cmpUint(a.key.v, b.key.v)
		})
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
