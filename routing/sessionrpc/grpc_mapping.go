package sessionrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	wire "github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
)

// mapping is a validated GRPCConfig, ready to run (compileGRPC).
type mapping struct {
	request *tree
	rules   []*rule
	refuse  bool
	done    *doneMapping
}

// rule is a compiled EventRule.
type rule struct {
	typ      string            // the constant event type, or "" with typeFrom
	typeFrom []string          // the path choosing the type through types
	types    map[string]string // value → event type ("*": any other)
	has      []string
	every    int
	members  *tree
}

// doneMapping is a compiled DoneMapping.
type doneMapping struct {
	text    bool
	members *tree
}

// source is where one member's value comes from: a constant, a template, the whole
// document, or a path in it (with a fallback when the path is absent).
type source struct {
	constant json.RawMessage
	template []tplPart
	whole    bool
	path     []string
	fallback json.RawMessage
}

// tree is the members of a JSON object to build, in a fixed order; a node is a leaf
// (src set) or a nested object (kids).
type tree struct {
	kids []*node
}

type node struct {
	key  string
	qkey []byte // key, JSON-quoted, with its colon
	src  *source
	sub  *tree
}

// add puts s at the member path dst.
func (t *tree) add(dst []string, s source) error {
	for i, k := range dst {
		n := t.child(k)
		last := i == len(dst)-1
		switch {
		case n == nil:
			n = &node{key: k, qkey: append(quote(k), ':')}
			t.kids = append(t.kids, n)
		case n.src != nil || last:
			return fmt.Errorf("the member %q is set twice", strings.Join(dst[:i+1], "."))
		}
		if last {
			n.src = &s
			return nil
		}
		if n.sub == nil {
			n.sub = &tree{}
		}
		t = n.sub
	}
	return nil
}

func (t *tree) child(k string) *node {
	for _, n := range t.kids {
		if n.key == k {
			return n
		}
	}
	return nil
}

// has reports whether the top-level member k is set.
func (t *tree) has(k string) bool { return t.child(k) != nil }

// write appends the members of t resolved against d to buf, each preceded by a comma
// unless first; it returns whether it wrote any. A member whose source is absent is left
// out, and so is a nested object left empty.
func (t *tree) write(buf []byte, d *doc, first bool) ([]byte, bool) {
	return t.writeMarking(buf, d, first, nil)
}

// mark asks writeMarking for the span of one leaf's value in buf.
type mark struct {
	leaf       *node
	start, end int
	ok         bool
}

// writeMarking is write recording in m (when not nil) where m.leaf's value was written.
func (t *tree) writeMarking(buf []byte, d *doc, first bool, m *mark) ([]byte, bool) {
	wrote := false
	for _, n := range t.kids {
		mark := len(buf)
		if !first || wrote {
			buf = append(buf, ',')
		}
		buf = append(buf, n.qkey...)
		var ok bool
		if n.src != nil {
			start := len(buf)
			if buf, ok = n.src.appendTo(buf, d); ok && m != nil && n == m.leaf {
				m.start, m.end, m.ok = start, len(buf), true
			}
		} else {
			buf = append(buf, '{')
			if buf, ok = n.sub.write(buf, d, true); ok {
				buf = append(buf, '}')
			}
		}
		if !ok {
			buf = buf[:mark]
			continue
		}
		wrote = true
	}
	return buf, wrote
}

// appendTo appends the member's JSON value in d to buf; ok false leaves the member out
// (buf is then to be cut back by the caller).
func (s *source) appendTo(buf []byte, d *doc) ([]byte, bool) {
	switch {
	case s.constant != nil:
		return append(buf, s.constant...), true
	case s.template != nil:
		return append(s.expand(append(buf, '"'), d), '"'), true
	case s.whole:
		return append(buf, d.raw...), len(d.raw) > 0
	}
	if v, ok := d.lookup(s.path); ok {
		return append(buf, v...), true
	}
	return append(buf, s.fallback...), s.fallback != nil
}

// doc is a JSON document read by path.
type doc struct {
	raw []byte
}

// lookup returns the value at path; ok false when it is absent or null (or the document
// is not an object along the path).
func (d *doc) lookup(path []string) ([]byte, bool) {
	v, ok := d.raw, len(d.raw) > 0
	for _, k := range path {
		if v, ok = wire.Member(v, k); !ok {
			return nil, false
		}
	}
	if !ok || string(v) == "null" {
		return nil, false
	}
	return v, true
}

// tplPart is a literal (escaped for the inside of a JSON string), or (path set) the text
// of a value.
type tplPart struct {
	lit  []byte
	path []string
}

// parseTemplate splits a template into literals and {path} placeholders.
func parseTemplate(s string) ([]tplPart, error) {
	parts := []tplPart{}
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '{' && i+1 < len(s) && s[i+1] == '{', c == '}' && i+1 < len(s) && s[i+1] == '}':
			lit.WriteByte(c)
			i++
		case c == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("%q: a { is not closed", s)
			}
			p, err := parsePath(s[i+1 : i+end])
			if err != nil || len(p) == 0 {
				return nil, fmt.Errorf("%q: the placeholder %w", s, pathErr(s[i+1:i+end], err))
			}
			if lit.Len() > 0 {
				parts = append(parts, tplPart{lit: wire.AppendEscaped(nil, lit.String())})
				lit.Reset()
			}
			parts = append(parts, tplPart{path: p})
			i += end
		case c == '}':
			return nil, fmt.Errorf("%q: a } is not opened (write }} for a brace)", s)
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, tplPart{lit: wire.AppendEscaped(nil, lit.String())})
	}
	return parts, nil
}

// expand appends the template rendered against d to buf, escaped for the inside of a
// JSON string.
func (s *source) expand(buf []byte, d *doc) []byte {
	for _, p := range s.template {
		if p.path == nil {
			buf = append(buf, p.lit...)
		} else if v, ok := d.lookup(p.path); ok {
			buf = appendInner(buf, v)
		}
	}
	return buf
}

// errNotObject is the error of a chat.start payload that is not a JSON object.
var errNotObject = errors.New("the chat.start payload is not a JSON object")

// buildRequest returns the request params of the gRPC method for a chat.start payload.
func (m *mapping) buildRequest(payload []byte) ([]byte, error) {
	payload = bytes.TrimSpace(payload)
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	if payload[0] != '{' || !json.Valid(payload) {
		return nil, errNotObject
	}
	d := &doc{raw: payload}
	buf, _ := m.request.write(append(make([]byte, 0, 64), '{'), d, true)
	return append(buf, '}'), nil
}

// eventType returns the event type r gives the message d (the n-th of its stream), "" when
// r does not apply to it.
func (r *rule) eventType(d *doc, n int) string {
	if r.every > 1 && n%r.every != 0 {
		return ""
	}
	if r.has != nil {
		if _, ok := d.lookup(r.has); !ok {
			return ""
		}
	}
	if r.typeFrom == nil {
		return r.typ
	}
	v, ok := d.lookup(r.typeFrom)
	if !ok {
		return r.types["*"]
	}
	if len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 {
		v = v[1 : len(v)-1] // a string's contents, looked up without a copy
		if t, ok := r.types[string(v)]; ok {
			return t
		}
	} else if t, ok := r.types[textOf(v)]; ok {
		return t
	}
	return r.types["*"]
}

// frameStart begins a chat.event frame (the event's type follows), doneStart a chat.done
// frame.
var (
	frameStart = []byte(`{"type":"` + wire.TypeChatEvent + `","payload":{"type":`)
	doneStart  = []byte(`{"type":"` + wire.TypeChatDone + `","payload":{`)
)

// appendEvents appends the chat.event frames of the message d (the n-th of its stream) to
// frames, and the text of its text-delta events to text (escaped for the inside of a JSON
// string) when it is not nil; mapped says whether any rule applied.
func (m *mapping) appendEvents(frames [][]byte, d *doc, n int, text *[]byte) (_ [][]byte, mapped bool) {
	for _, r := range m.rules {
		typ := r.eventType(d, n)
		if typ == "" {
			continue
		}
		mapped = true
		buf := append(make([]byte, 0, 64+len(d.raw)), frameStart...)
		buf = append(wire.AppendEscaped(append(buf, '"'), typ), '"')
		if text == nil || typ != wire.EventTextDelta {
			buf, _ = r.members.write(buf, d, false)
		} else { // the reply's text: the text member's value as written
			m := mark{leaf: r.members.child("text")}
			buf, _ = r.members.writeMarking(buf, d, false, &m)
			if m.ok {
				*text = appendInner(*text, buf[m.start:m.end])
			}
		}
		frames = append(frames, append(buf, '}', '}'))
	}
	return frames, mapped
}

// doneFrame returns the chat.done frame: the concatenated text (escaped), then the members
// taken from the last message (nil when the stream had none) and the constants.
func (m *mapping) doneFrame(last, text []byte) []byte {
	buf := append(make([]byte, 0, len(doneStart)+len(text)+64), doneStart...)
	first := true
	if m.done.text {
		buf = append(buf, `"text":"`...)
		buf = append(append(buf, text...), '"')
		first = false
	}
	buf, _ = m.done.members.write(buf, &doc{raw: last}, first)
	return append(buf, '}', '}')
}

// errorPayload is the payload of a chat.error frame.
type errorPayload struct {
	ErrorID string         `json:"errorId"`
	Message string         `json:"message"`
	Code    int            `json:"code"`
	Detail  map[string]any `json:"detail,omitempty"`
}

// errorFrame returns the chat.error frame of p.
func errorFrame(p errorPayload) []byte {
	payload, err := json.Marshal(p)
	if err != nil { // a detail the backend sent that does not encode
		p.Detail = nil
		payload, _ = json.Marshal(p) //nolint:errchkjson // strings and an int always encode
	}
	out, _ := json.Marshal(wire.Frame{Type: wire.TypeChatError, Payload: payload}) //nolint:errchkjson // raw JSON just encoded
	return out
}
