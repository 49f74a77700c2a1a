package jsonrpc

import (
	"sync"
	"unsafe"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Names of the limits, as they appear in DecodeError.Limit.
const (
	LimitMaxDepth       = "max_depth"
	LimitMaxStringBytes = "max_string_bytes"
	LimitMaxBatch       = "max_batch_size"
)

// Reasons given in top-level decode errors.
const (
	reasonSyntax      = "invalid JSON"
	reasonLimit       = "limit exceeded"
	reasonNotEnvelope = "request must be an object or an array"
	reasonEmptyBatch  = "empty batch"
)

// Decode decodes an HTTP body or WebSocket message holding one JSON-RPC 2.0 request or a
// batch. On success the payload has one member per request, in order, each either a
// Request or the error that replaces it; the error result is then nil. When the body as a
// whole cannot be read (invalid JSON, a limit exceeded, an empty batch, a top-level value
// that is neither an object nor an array) the payload is empty and the error says why,
// with the zero ID.
//
// Request.Params aliases body, so body must not be modified while Params is in use, unless
// reserved members were removed from it, in which case it is a copy. Method, ID, DependsOn
// and errors never alias body, and Decode keeps no reference to body after it returns.
func Decode(body []byte, lim Limits) (Payload, *DecodeError) {
	d := decoders.Get().(*decoder)
	d.reset(body, lim)
	p, err := d.decode()
	d.release()
	decoders.Put(d)
	return p, err
}

// decoders recycles decoder scratch space between calls.
var decoders = sync.Pool{New: func() any { return new(decoder) }}

// maxScratchBytes bounds the scratch space a pooled decoder may keep in each buffer.
const maxScratchBytes = 64 << 10

// span is a range [off, end) of a buffer named by its user.
type span struct{ off, end int }

// decoder is the state of one Decode call. Strings of every member (methods and ids) are
// gathered in text and params rewritten without reserved members in pbuf, so that the
// whole payload costs a handful of allocations however many members it has.
type decoder struct {
	buf      []byte // the body
	pos      int    // read position in buf
	maxDepth int
	maxStr   int
	maxBatch int
	limit    string // first limit exceeded, if any
	limitMax int

	cur    *draft  // member being decoded, nil outside members
	drafts []draft // members decoded so far
	text   []byte  // method names and raw ids of all members
	deps   []span  // depends_on ids, as spans of text
	pbuf   []byte  // object params rewritten without reserved members
	pm     []span  // spans of the kept members of the params object being decoded
	keys   []nameRef
	names  []byte // unescaped member names that keys refer to
	stack  []byte // open containers in skipDeep
}

// draft is a member being decoded: spans instead of strings, reasons instead of errors.
type draft struct {
	method    span // in text
	id        span // raw id in text, when hasID
	params    span // in buf, or in pbuf when ownParams
	deps      span // range of decoder.deps
	deadline  int64
	hasID     bool
	idBad     bool // an id member was present but unusable
	hasParams bool
	ownParams bool
	reqErr    string // first reason the member is an invalid request
	paramErr  string // first reason its params are invalid
}

// reset prepares d for body.
func (d *decoder) reset(body []byte, lim Limits) {
	d.buf, d.pos = body, 0
	d.maxDepth, d.maxStr = lim.MaxDepth, lim.MaxStringBytes
	if d.maxDepth <= 0 {
		d.maxDepth = DefaultMaxDepth
	}
	if d.maxStr <= 0 {
		d.maxStr = DefaultMaxStringBytes
	}
	d.maxBatch = lim.MaxBatch
	if d.maxBatch <= 0 {
		d.maxBatch = DefaultMaxBatch
	}
	d.limit, d.limitMax = "", 0
}

// release drops every reference into the body and the payload, and scratch space that
// grew too large to keep.
func (d *decoder) release() {
	d.buf, d.cur = nil, nil
	clear(d.drafts)
	d.drafts = trim(d.drafts[:0])
	d.text = trim(d.text[:0])
	d.deps = trim(d.deps[:0])
	d.pbuf = trim(d.pbuf[:0])
	d.pm = trim(d.pm[:0])
	d.keys = trim(d.keys[:0])
	d.names = trim(d.names[:0])
	d.stack = trim(d.stack[:0])
}

// trim returns s, or nil when its backing array is larger than maxScratchBytes.
func trim[T any](s []T) []T {
	var zero T
	if uintptr(cap(s))*unsafe.Sizeof(zero) > maxScratchBytes {
		return nil
	}
	return s
}

// exceed records that a limit was exceeded; the first one found is reported.
func (d *decoder) exceed(limit string, maxValue int) {
	if d.limit == "" {
		d.limit, d.limitMax = limit, maxValue
	}
}

// decode reads the whole body, then builds the payload.
func (d *decoder) decode() (Payload, *DecodeError) {
	d.ws()
	var ok bool
	c := d.peek()
	switch c {
	case '{':
		ok = d.member(1)
	case '[':
		ok = d.batch()
	default:
		ok = d.value(0)
	}
	if d.ws(); !ok || d.pos != len(d.buf) {
		return Payload{}, &DecodeError{Code: schemas.CodeParseError, Reason: reasonSyntax}
	}
	switch {
	case d.limit != "":
		return Payload{}, &DecodeError{Code: schemas.CodeInvalidRequest, Reason: reasonLimit, Limit: d.limit, Max: d.limitMax}
	case c != '{' && c != '[':
		return Payload{}, &DecodeError{Code: schemas.CodeInvalidRequest, Reason: reasonNotEnvelope}
	case len(d.drafts) == 0:
		return Payload{}, &DecodeError{Code: schemas.CodeInvalidRequest, Reason: reasonEmptyBatch}
	}
	return Payload{Batch: c == '[', Members: d.build()}, nil
}

// batch decodes the array at d.pos: each element is a member.
func (d *decoder) batch() bool {
	if d.open(']') { // depth 1 is always allowed: MaxDepth is at least 1
		return true
	}
	for n := 1; ; n++ {
		var ok bool
		switch {
		case n > d.maxBatch:
			// Past the limit: check syntax only, build nothing.
			d.exceed(LimitMaxBatch, d.maxBatch)
			d.cur = nil
			ok = d.value(1)
		case d.peek() == '{':
			ok = d.member(2)
		default:
			d.newDraft().reqErr = reasonNotObject
			ok = d.value(1)
		}
		if !ok {
			return false
		}
		if more, ok := d.next(']'); !more {
			return ok
		}
	}
}

// newDraft starts a member and makes it current.
func (d *decoder) newDraft() *draft {
	d.drafts = append(d.drafts, draft{})
	d.cur = &d.drafts[len(d.drafts)-1]
	return d.cur
}

// invalid records why the current member, if any, is an invalid request.
func (d *decoder) invalid(reason string) {
	if d.cur != nil && d.cur.reqErr == "" {
		d.cur.reqErr = reason
	}
}

// build turns the drafts into members, with one allocation each for the members, their
// strings, their depends_on ids, rewritten params and errors.
func (d *decoder) build() []Member {
	text := string(d.text)
	members := make([]Member, len(d.drafts))
	var ids []ID
	if len(d.deps) > 0 {
		ids = make([]ID, len(d.deps))
		for i, s := range d.deps {
			ids[i] = ID{raw: text[s.off:s.end]}
		}
	}
	var params []byte
	if len(d.pbuf) > 0 {
		params = append([]byte(nil), d.pbuf...)
	}
	errs := d.errors()
	for i := range d.drafts {
		m := &d.drafts[i]
		var id ID
		if m.hasID {
			id = ID{raw: text[m.id.off:m.id.end]}
		}
		if e := m.err(id); e.Code != 0 {
			errs[0] = e
			members[i].Err, errs = &errs[0], errs[1:]
			continue
		}
		r := &members[i].Request
		r.Method, r.ID, r.DeadlineMs = text[m.method.off:m.method.end], id, m.deadline
		if m.hasParams {
			src := d.buf
			if m.ownParams {
				src = params
			}
			r.Params = src[m.params.off:m.params.end:m.params.end]
		}
		if m.deps.end > m.deps.off {
			r.DependsOn = ids[m.deps.off:m.deps.end:m.deps.end]
		}
	}
	return members
}

// errors allocates room for the errors of the members that failed.
func (d *decoder) errors() []DecodeError {
	n := 0
	for i := range d.drafts {
		if d.drafts[i].reqErr != "" || d.drafts[i].paramErr != "" {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return make([]DecodeError, n)
}

// err returns the member's error, with Code 0 when it is a valid request. An invalid
// request outranks invalid params.
func (m *draft) err(id ID) DecodeError {
	switch {
	case m.reqErr != "":
		return DecodeError{Code: schemas.CodeInvalidRequest, Reason: m.reqErr, ID: id}
	case m.paramErr != "":
		return DecodeError{Code: schemas.CodeInvalidParams, Reason: m.paramErr, ID: id}
	}
	return DecodeError{}
}
