package jsonrpc

import "bytes"

// Reasons a member is an invalid request, found in any value it holds.
const (
	reasonDuplicate = "duplicate member name"
	reasonNotObject = "request must be an object"
)

// maxLinearNames is the number of names an object may have before its duplicate check
// switches from comparing with each earlier name to a map.
const maxLinearNames = 16

// nameRef locates an unescaped member name: in decoder.names when esc, else in the body.
type nameRef struct {
	off, end int
	esc      bool
}

// nameSet is the set of names of one open object, for the duplicate check. The first
// names live on decoder.keys from base; past maxLinearNames they move to a map.
type nameSet struct {
	base  int
	mark  int // length of decoder.names when the object opened
	large map[string]struct{}
}

// value decodes the value at d.pos, whose containers open at depth+1, checking every
// object it holds for duplicate names.
func (d *decoder) value(depth int) bool {
	switch d.peek() {
	case '{':
		return d.object(depth + 1)
	case '[':
		return d.array(depth + 1)
	}
	return d.scalar()
}

// array decodes the array at d.pos, at depth.
func (d *decoder) array(depth int) bool {
	if depth > d.maxDepth {
		return d.tooDeep()
	}
	if d.open(']') {
		return true // empty
	}
	for {
		if !d.value(depth) {
			return false
		}
		if more, ok := d.next(']'); !more {
			return ok
		}
	}
}

// object decodes the object at d.pos, at depth.
func (d *decoder) object(depth int) bool {
	if depth > d.maxDepth {
		return d.tooDeep()
	}
	if d.open('}') {
		return true // empty
	}
	set := d.openNames()
	for {
		ref, ok := d.name()
		if !ok {
			return false
		}
		if d.addName(&set, ref) {
			d.invalid(reasonDuplicate)
		}
		if !d.consume(':') {
			return false
		}
		d.ws()
		if !d.value(depth) {
			return false
		}
		more, ok := d.next('}')
		if !ok {
			return false
		}
		if !more {
			d.closeNames(set)
			return true
		}
	}
}

// name scans the member name at d.pos and locates its unescaped bytes.
func (d *decoder) name() (nameRef, bool) {
	if d.peek() != '"' {
		return nameRef{}, false
	}
	start, end, esc, ok := d.str()
	if !ok || !esc {
		return nameRef{off: start, end: end}, ok
	}
	off := len(d.names)
	d.names, _ = unescape(d.names, d.buf[start:end]) // str has checked every escape
	return nameRef{off: off, end: len(d.names), esc: true}, true
}

// nameBytes returns the unescaped bytes of the name ref locates.
func (d *decoder) nameBytes(ref nameRef) []byte {
	if ref.esc {
		return d.names[ref.off:ref.end]
	}
	return d.buf[ref.off:ref.end]
}

// openNames starts the name set of an object.
func (d *decoder) openNames() nameSet {
	return nameSet{base: len(d.keys), mark: len(d.names)}
}

// closeNames ends the name set of an object, freeing its scratch space.
func (d *decoder) closeNames(set nameSet) {
	d.keys, d.names = d.keys[:set.base], d.names[:set.mark]
}

// addName adds ref to set and reports whether the name was already in it.
func (d *decoder) addName(set *nameSet, ref nameRef) bool {
	name := d.nameBytes(ref)
	if set.large == nil {
		for _, k := range d.keys[set.base:] {
			if bytes.Equal(d.nameBytes(k), name) {
				return true
			}
		}
		if len(d.keys)-set.base < maxLinearNames {
			d.keys = append(d.keys, ref)
			return false
		}
		set.large = make(map[string]struct{}, 2*maxLinearNames)
		for _, k := range d.keys[set.base:] {
			set.large[string(d.nameBytes(k))] = struct{}{}
		}
		d.keys = d.keys[:set.base]
	}
	if _, dup := set.large[string(name)]; dup {
		return true
	}
	set.large[string(name)] = struct{}{}
	return false
}

// open enters the container at d.pos and reports whether it is empty (then consumed whole,
// up to its closing byte end).
func (d *decoder) open(end byte) (empty bool) {
	d.pos++
	d.ws()
	if d.peek() == end {
		d.pos++
		return true
	}
	return false
}

// next reads what follows an element of a container closed by end: a comma (more is true)
// or the closing byte (more is false). ok is false when it is neither.
func (d *decoder) next(end byte) (more, ok bool) {
	d.ws()
	switch d.peek() {
	case ',':
		d.pos++
		d.ws()
		return true, true
	case end:
		d.pos++
		return false, true
	default:
		return false, false
	}
}
