package jsonrpc

// Reasons the reserved members of params are invalid.
const (
	reasonDependsOn = "depends_on must be an array of string or number ids"
	reasonDeadline  = "deadline_ms must be a positive integer no greater than 2^53"
)

// maxDeadline is the largest deadline_ms accepted: 2^53, the largest integer every JSON
// implementation reads exactly.
const maxDeadline = 1 << 53

// The reserved members of object params.
const (
	reservedNone = iota
	reservedDependsOn
	reservedDeadline
)

// reservedMember returns which reserved member name is, if any.
func reservedMember(name []byte) int {
	switch string(name) {
	case "depends_on":
		return reservedDependsOn
	case "deadline_ms":
		return reservedDeadline
	}
	return reservedNone
}

// params decodes the value of params at d.pos, the envelope being at depth. Object params
// lose their reserved members, which go to the draft.
func (d *decoder) params(m *draft, depth int) bool {
	start := d.pos
	switch d.peek() {
	case '{':
		if !d.paramsObject(m, depth+1) {
			return false
		}
	case '[':
		if !d.array(depth + 1) {
			return false
		}
	default:
		d.invalid(reasonParams)
		return d.value(depth)
	}
	if !m.ownParams {
		m.params = span{start, d.pos}
	}
	m.hasParams = true
	return true
}

// paramsObject decodes the object params at d.pos, at depth. When a reserved member is
// present, the other members are copied to d.pbuf and m.params points there.
func (d *decoder) paramsObject(m *draft, depth int) bool {
	if depth > d.maxDepth {
		return d.tooDeep()
	}
	if d.open('}') {
		return true // empty
	}
	d.pm = d.pm[:0]
	reserved := false
	set := d.openNames()
	for {
		start := d.pos
		ref, ok := d.name()
		if !ok {
			return false
		}
		if d.addName(&set, ref) {
			d.invalid(reasonDuplicate)
		}
		r := reservedMember(d.nameBytes(ref))
		if !d.consume(':') {
			return false
		}
		d.ws()
		if !d.paramsMember(m, r, depth) {
			return false
		}
		if r == reservedNone {
			d.pm = append(d.pm, span{start, d.pos})
		}
		reserved = reserved || r != reservedNone
		more, ok := d.next('}')
		if !ok {
			return false
		}
		if !more {
			d.closeNames(set)
			if reserved {
				d.rewriteParams(m)
			}
			return true
		}
	}
}

// paramsMember decodes the value of a member of object params at d.pos.
func (d *decoder) paramsMember(m *draft, r, depth int) bool {
	switch r {
	case reservedDependsOn:
		return d.dependsOn(m, depth)
	case reservedDeadline:
		return d.deadline(m, depth)
	}
	return d.value(depth)
}

// rewriteParams writes the kept members of the params object to d.pbuf.
func (d *decoder) rewriteParams(m *draft) {
	off := len(d.pbuf)
	d.pbuf = append(d.pbuf, '{')
	for i, s := range d.pm {
		if i > 0 {
			d.pbuf = append(d.pbuf, ',')
		}
		d.pbuf = append(d.pbuf, d.buf[s.off:s.end]...)
	}
	d.pbuf = append(d.pbuf, '}')
	m.params, m.ownParams = span{off, len(d.pbuf)}, true
}

// invalidParams records why the current member's params are invalid.
func (m *draft) invalidParams(reason string) {
	if m.paramErr == "" {
		m.paramErr = reason
	}
}

// dependsOn decodes the value of params.depends_on, an array of string or number ids, at
// d.pos; params is at depth.
func (d *decoder) dependsOn(m *draft, depth int) bool {
	if d.peek() != '[' {
		m.invalidParams(reasonDependsOn)
		return d.value(depth)
	}
	if depth+1 > d.maxDepth {
		return d.tooDeep()
	}
	d.pos++
	first := len(d.deps)
	for d.ws(); d.peek() != ']'; {
		if !d.dependency(m, depth+1) {
			return false
		}
		if d.ws(); d.peek() == ',' {
			d.pos++
			d.ws()
			if d.peek() == ']' {
				return false // a trailing comma
			}
		} else if d.peek() != ']' {
			return false
		}
	}
	d.pos++
	m.deps = span{first, len(d.deps)}
	return true
}

// dependency decodes one element of depends_on at d.pos, at depth.
func (d *decoder) dependency(m *draft, depth int) bool {
	start := d.pos
	switch c := d.peek(); {
	case c == '"':
		if _, _, _, ok := d.str(); !ok {
			return false
		}
	case c == '-' || isDigit(c):
		if _, ok := d.number(); !ok {
			return false
		}
	default:
		m.invalidParams(reasonDependsOn)
		return d.value(depth)
	}
	d.deps = append(d.deps, d.keep(d.buf[start:d.pos]))
	return true
}

// deadline decodes the value of params.deadline_ms, a positive integer written without
// fraction or exponent, at d.pos.
func (d *decoder) deadline(m *draft, depth int) bool {
	if c := d.peek(); c < '1' || c > '9' {
		m.invalidParams(reasonDeadline)
		return d.value(depth)
	}
	start := d.pos
	integer, ok := d.number()
	if !ok {
		return false
	}
	if !integer || d.pos-start > len("9007199254740992") {
		m.invalidParams(reasonDeadline)
		return true
	}
	var v int64
	for _, c := range d.buf[start:d.pos] {
		v = v*10 + int64(c-'0')
	}
	if v > maxDeadline {
		m.invalidParams(reasonDeadline)
		return true
	}
	m.deadline = v
	return true
}
