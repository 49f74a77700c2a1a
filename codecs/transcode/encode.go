package transcode

import (
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// encoder is the state of one JSON → wire transcoding. It reads the document in one pass
// and appends wire bytes to out, reserving one byte for the length of each nested message
// and widening it afterwards if the message turned out longer.
type encoder struct {
	scanner
	out     []byte
	plan    *Plan
	discard bool
	strict  bool     // Options.StrictNumbers
	canon   int      // > 0 inside google.protobuf.Any: write in deterministic order
	sbuf    []byte   // unescaped string contents
	bin     []byte   // decoded base64
	keys    []byte   // unescaped map keys, for duplicate checks and sorting
	mkeys   []mapKey // keys of the open maps
	bits    []uint64 // seen sets of open messages with more than 64 fields and oneofs
	members []member // members of open objects being reordered (canonical mode)
	stack   []byte   // open containers of a skipped value
}

var encoders = sync.Pool{New: func() any { return new(encoder) }}

// maxPooled is the largest scratch buffer kept between calls.
const maxPooled = 64 << 10

func getEncoder(p *Plan, dst, in []byte) *encoder {
	e := encoders.Get().(*encoder)
	e.in, e.pos, e.out, e.plan, e.discard, e.strict, e.canon = in, 0, dst, p, p.opts.DiscardUnknown, p.opts.StrictNumbers, 0
	return e
}

func putEncoder(e *encoder) {
	e.in, e.out, e.plan = nil, nil, nil
	if cap(e.sbuf) > maxPooled || cap(e.bin) > maxPooled || cap(e.keys) > maxPooled {
		e.sbuf, e.bin, e.keys = nil, nil, nil
	}
	e.mkeys, e.bits, e.members, e.stack = e.mkeys[:0], e.bits[:0], e.members[:0], e.stack[:0]
	encoders.Put(e)
}

// EncodeJSON appends to dst the wire encoding of the message whose proto3 JSON form is
// doc, accepting exactly what protojson.Unmarshal accepts. On error it returns dst
// unchanged and a *PathError.
func (p *Plan) EncodeJSON(dst, doc []byte) ([]byte, error) {
	e := getEncoder(p, dst, doc)
	err := e.message(p.root, recursionLimit)
	if err == nil {
		err = e.end()
	}
	out := e.out
	putEncoder(e)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// EncodePositional appends to dst the wire encoding of a message given as a JSON array of
// field values, the positional form of JSON-RPC params: element i is the value of the
// message's i-th field in field-number order, in its proto3 JSON form. More elements than
// fields is an error; missing trailing elements leave their fields unset. For
// google.protobuf.Value and ListValue the array is their own JSON form.
func (p *Plan) EncodePositional(dst, arr []byte) ([]byte, error) {
	switch p.root.wkt {
	case wktValue, wktListValue:
		return p.EncodeJSON(dst, arr)
	case wktNone:
	default:
		return dst, fail("positional parameters need a message with plain fields")
	}
	e := getEncoder(p, dst, arr)
	err := e.positional(p.root, recursionLimit-1)
	if err == nil {
		err = e.end()
	}
	out := e.out
	putEncoder(e)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// end checks that only whitespace follows the document.
func (e *encoder) end() *PathError {
	e.ws()
	if e.pos != len(e.in) {
		return fail("unexpected data after the JSON value")
	}
	return nil
}

// positional encodes the array at e.pos as the fields of m in number order.
func (e *encoder) positional(m *message, depth int) *PathError {
	e.ws()
	if !e.eat('[') {
		return e.want("array")
	}
	seen := e.openSeen(m)
	e.ws()
	if e.eat(']') {
		return e.closeObject(m, seen)
	}
	for i := 0; ; i++ {
		if i >= len(m.byNumber) {
			return fail("too many positional parameters").inIndex(i)
		}
		f := &m.fields[m.byNumber[i]]
		if err := e.member(m, f, &seen, depth); err != nil {
			return err.inIndex(i)
		}
		more, err := e.next(']')
		if err != nil {
			return err
		}
		if more {
			continue
		}
		return e.closeObject(m, seen)
	}
}

// message encodes the JSON value at e.pos as the contents of a message of type m.
func (e *encoder) message(m *message, depth int) *PathError {
	if depth--; depth < 0 {
		return fail(reasonDepth)
	}
	if m.wkt != wktNone {
		return e.wellKnown(m, depth)
	}
	return e.object(m, depth, false)
}

// object encodes the JSON object at e.pos as a message of type m. skipType ignores an
// "@type" member, as in the JSON form of google.protobuf.Any.
func (e *encoder) object(m *message, depth int, skipType bool) *PathError {
	e.ws()
	if !e.eat('{') {
		return e.want("object")
	}
	if e.canon > 0 {
		return e.canonObject(m, depth, skipType)
	}
	seen := e.openSeen(m)
	e.ws()
	if e.eat('}') {
		return e.closeObject(m, seen)
	}
	for {
		ks, ke, esc, err := e.name()
		if err != nil {
			return err
		}
		name := e.in[ks:ke]
		if esc {
			e.sbuf = unescape(e.sbuf[:0], name)
			name = e.sbuf
		}
		switch i := m.names.lookupBytes(name); {
		case skipType && string(name) == typeKey:
			e.ws()
			if _, _, _, err := e.str(); err != nil {
				return err
			}
		case i < 0:
			if err := e.unknown(depth); err != nil {
				return err.inField(name)
			}
		default:
			if err := e.member(m, &m.fields[i], &seen, depth); err != nil {
				return err.inField(e.keyName(ks, ke, esc))
			}
		}
		more, err := e.next('}')
		if err != nil {
			return err
		}
		if more {
			continue
		}
		return e.closeObject(m, seen)
	}
}

// closeObject checks that the required fields of m are in seen and frees seen.
func (e *encoder) closeObject(m *message, seen seenSet) *PathError {
	if len(m.required) > 0 && e.canon == 0 { // protojson does not check inside Any
		for _, i := range m.required {
			if !e.testAndSet(&seen, len(m.fields)+len(m.oneofs)+int(i)) {
				return fail("required field is not set").inField([]byte(m.fields[i].jsonName))
			}
		}
	}
	e.closeSeen(seen)
	return nil
}

// name scans a member name and the colon after it.
func (e *encoder) name() (start, end int, esc bool, err *PathError) {
	if e.peek() != '"' {
		return 0, 0, false, e.syntax()
	}
	start, end, esc, err = e.str()
	if err != nil {
		return 0, 0, false, err
	}
	e.ws()
	if !e.eat(':') {
		return 0, 0, false, e.syntax()
	}
	return start, end, esc, nil
}

// keyName returns the unescaped member name at in[start:end], for an error path.
func (e *encoder) keyName(start, end int, esc bool) []byte {
	if esc {
		return unescape(nil, e.in[start:end])
	}
	return e.in[start:end]
}

// unknown handles the value of a member that names no field.
func (e *encoder) unknown(depth int) *PathError {
	if !e.discard {
		return fail("unknown field")
	}
	var err *PathError
	e.stack, err = e.skip(depth, e.stack)
	return err
}

// member encodes the value at e.pos as field f of message m, whose fields and oneofs
// already set are in seen.
func (e *encoder) member(m *message, f *field, seen *seenSet, depth int) *PathError {
	if e.testAndSet(seen, f.index) {
		return fail("duplicate field")
	}
	e.ws()
	if !f.nullOK && e.peek() == 'n' {
		if !e.lit("null") {
			return e.syntax()
		}
		return nil // null means the default
	}
	if f.oneof >= 0 && e.testAndSet(seen, len(m.fields)+f.oneof) {
		return fail("another field of oneof " + m.oneofs[f.oneof] + " is already set")
	}
	if len(m.required) > 0 {
		e.testAndSet(seen, len(m.fields)+len(m.oneofs)+f.index)
	}
	switch {
	case f.card == cardList:
		return e.list(f, depth)
	case f.card == cardMap:
		return e.mapField(f, depth)
	case f.isMessage():
		return e.messageField(f, depth)
	}
	_, err := e.scalarField(f, f.presence)
	return err
}

// messageField encodes the value at e.pos as one message value of field f, tag included.
func (e *encoder) messageField(f *field, depth int) *PathError {
	e.out = append(e.out, f.tag...)
	if f.kind == protoreflect.GroupKind {
		if err := e.message(f.msg, depth); err != nil {
			return err
		}
		e.out = protowire.AppendTag(e.out, f.num, protowire.EndGroupType)
		return nil
	}
	pos := len(e.out)
	e.out = append(e.out, 0)
	if err := e.message(f.msg, depth); err != nil {
		return err
	}
	e.out = finishLen(e.out, pos)
	return nil
}

// finishLen writes at out[pos], a byte reserved for it, the length of what follows,
// moving what follows when the length needs more than one byte.
func finishLen(out []byte, pos int) []byte {
	n := len(out) - pos - 1
	if n < 0x80 {
		out[pos] = smallByte(n)
		return out
	}
	size := protowire.SizeVarint(uint64(n))
	for range size - 1 {
		out = append(out, 0)
	}
	copy(out[pos+size:], out[pos+1:pos+1+n])
	protowire.AppendVarint(out[:pos], uint64(n))
	return out
}

// list encodes the JSON array at e.pos as the values of repeated field f.
func (e *encoder) list(f *field, depth int) *PathError {
	e.ws()
	if !e.eat('[') {
		return e.want("array")
	}
	e.ws()
	if e.eat(']') {
		return nil
	}
	mark, pos := len(e.out), 0
	if f.packed {
		e.out = append(e.out, f.ptag...)
		pos = len(e.out)
		e.out = append(e.out, 0)
	}
	for i := 0; ; i++ {
		var err *PathError
		switch {
		case f.isMessage():
			err = e.messageField(f, depth)
		case f.packed:
			err = e.packed(f)
		default:
			_, err = e.scalarField(f, true)
		}
		if err != nil {
			return err.inIndex(i)
		}
		more, err := e.next(']')
		if err != nil {
			return err
		}
		if more {
			continue
		}
		break
	}
	if f.packed {
		if len(e.out) == pos+1 { // every element was an unknown enum name, discarded
			e.out = e.out[:mark]
		} else {
			e.out = finishLen(e.out, pos)
		}
	}
	return nil
}

// packed encodes the scalar at e.pos as an element of the packed list f.
func (e *encoder) packed(f *field) *PathError {
	v, skip, err := e.numeric(f)
	if err != nil || skip {
		return err
	}
	e.out = appendBits(e.out, f.wt, v)
	return nil
}
