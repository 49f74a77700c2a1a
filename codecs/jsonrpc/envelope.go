package jsonrpc

// Reasons a member's envelope is an invalid request. None echoes input.
const (
	reasonUnknownMember = "unknown member"
	reasonVersion       = `jsonrpc must be "2.0"`
	reasonNoVersion     = "missing jsonrpc"
	reasonMethod        = "method must be a non-empty string"
	reasonNoMethod      = "missing method"
	reasonParams        = "params must be an object or an array"
	reasonID            = "id must be a string, a number or null"
)

// The members of the envelope, as bits.
const (
	fieldJSONRPC uint8 = 1 << iota
	fieldMethod
	fieldParams
	fieldID
)

// envelopeField returns the bit of the envelope member called name, 0 for any other name.
// Names are case-sensitive and compared after unescaping.
func envelopeField(name []byte) uint8 {
	switch string(name) {
	case "jsonrpc":
		return fieldJSONRPC
	case "method":
		return fieldMethod
	case "params":
		return fieldParams
	case "id":
		return fieldID
	}
	return 0
}

// member decodes the request object at d.pos, at depth. Every member of it is read before
// the draft is complete, since the id may come last.
func (d *decoder) member(depth int) bool {
	m := d.newDraft()
	if depth > d.maxDepth {
		return d.tooDeep()
	}
	d.pos++
	d.ws()
	var seen uint8
	for d.peek() != '}' {
		mark := len(d.names)
		ref, ok := d.name()
		if !ok {
			return false
		}
		f := envelopeField(d.nameBytes(ref))
		d.names = d.names[:mark]
		if !d.consume(':') {
			return false
		}
		d.ws()
		if !d.envelopeMember(m, f, seen, depth) {
			return false
		}
		seen |= f
		if d.ws(); d.peek() == ',' {
			d.pos++
			d.ws()
			if d.peek() == '}' {
				return false // a trailing comma
			}
		} else if d.peek() != '}' {
			return false
		}
	}
	d.pos++
	if seen&fieldJSONRPC == 0 {
		d.invalid(reasonNoVersion)
	}
	if seen&fieldMethod == 0 {
		d.invalid(reasonNoMethod)
	}
	m.hasID = seen&fieldID != 0 && !m.idBad
	return true
}

// envelopeMember decodes the value of the envelope member f at d.pos, given the members
// seen before it.
func (d *decoder) envelopeMember(m *draft, f, seen uint8, depth int) bool {
	switch {
	case f == 0:
		d.invalid(reasonUnknownMember)
		return d.value(depth)
	case seen&f != 0:
		d.invalid(reasonDuplicate)
		m.idBad = m.idBad || f == fieldID
		return d.value(depth)
	case f == fieldJSONRPC:
		return d.version(depth)
	case f == fieldMethod:
		return d.method(m, depth)
	case f == fieldParams:
		return d.params(m, depth)
	}
	return d.id(m, depth)
}

// version decodes the value of jsonrpc, which must be the string "2.0".
func (d *decoder) version(depth int) bool {
	if d.peek() != '"' {
		d.invalid(reasonVersion)
		return d.value(depth)
	}
	start, end, esc, ok := d.str()
	if !ok {
		return false
	}
	v := d.buf[start:end]
	var tmp [8]byte
	if esc && len(v) <= 3*len(`\u0000`) {
		v, _ = unescape(tmp[:0], v)
	}
	if string(v) != "2.0" {
		d.invalid(reasonVersion)
	}
	return true
}

// method decodes the value of method, a non-empty string, into d.text.
func (d *decoder) method(m *draft, depth int) bool {
	if d.peek() != '"' {
		d.invalid(reasonMethod)
		return d.value(depth)
	}
	start, end, esc, ok := d.str()
	if !ok {
		return false
	}
	m.method.off = len(d.text)
	if esc {
		d.text, _ = unescape(d.text, d.buf[start:end])
	} else {
		d.text = append(d.text, d.buf[start:end]...)
	}
	m.method.end = len(d.text)
	if start == end {
		d.invalid(reasonMethod)
	}
	return true
}

// id decodes the value of id: a string, a number or null, kept as raw JSON in d.text.
func (d *decoder) id(m *draft, depth int) bool {
	start := d.pos
	switch c := d.peek(); {
	case c == '"' || c == '-' || isDigit(c) || c == 'n':
		if !d.scalar() {
			return false
		}
	default:
		m.idBad = true
		d.invalid(reasonID)
		return d.value(depth)
	}
	m.id = d.keep(d.buf[start:d.pos])
	return true
}

// keep copies raw into d.text and returns where it went.
func (d *decoder) keep(raw []byte) span {
	off := len(d.text)
	d.text = append(d.text, raw...)
	return span{off, len(d.text)}
}
