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
	wrote := false
	for _, n := range t.kids {
		mark := len(buf)
		if !first || wrote {
			buf = append(buf, ',')
		}
		buf = append(buf, n.qkey...)
		if n.src != nil {
			v, ok := n.src.resolve(d)
			if !ok {
				buf = buf[:mark]
				continue
			}
			buf = append(buf, v...)
		} else {
			buf = append(buf, '{')
			var some bool
			if buf, some = n.sub.write(buf, d, true); !some {
				buf = buf[:mark]
				continue
			}
			buf = append(buf, '}')
		}
		wrote = true
	}
	return buf, wrote
}

// resolve returns the member's JSON value in d; ok false leaves the member out.
func (s *source) resolve(d *doc) (json.RawMessage, bool) {
	switch {
	case s.constant != nil:
		return s.constant, true
	case s.template != nil:
		return quote(s.expand(d)), true
	case s.whole:
		return d.raw, len(d.raw) > 0
	}
	if v, ok := d.lookup(s.path); ok {
		return v, true
	}
	return s.fallback, s.fallback != nil
}

// doc is a JSON document read by path; its top-level object is decoded once, on the
// first lookup.
type doc struct {
	raw  json.RawMessage
	top  map[string]json.RawMessage
	read bool
}

// lookup returns the value at path; ok false when it is absent or null (or the document
// is not an object along the path).
func (d *doc) lookup(path []string) (json.RawMessage, bool) {
	if len(path) == 0 {
		return d.raw, len(d.raw) > 0
	}
	if !d.read {
		d.read = true
		if json.Unmarshal(d.raw, &d.top) != nil {
			d.top = nil
		}
	}
	v, ok := d.top[path[0]]
	for _, k := range path[1:] {
		if !ok {
			break
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil {
			return nil, false
		}
		v, ok = m[k]
	}
	if !ok || bytes.Equal(v, []byte("null")) {
		return nil, false
	}
	return v, true
}

// text returns the text of the value at path: a string's contents, any other value's
// JSON, "" when absent.
func (d *doc) text(path []string) string {
	v, ok := d.lookup(path)
	if !ok {
		return ""
	}
	return textOf(v)
}

// textOf is the text of a JSON value: a string's contents, any other value's JSON.
func textOf(v json.RawMessage) string {
	if len(v) > 0 && v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	}
	return string(v)
}

// tplPart is a literal, or (path set) the text of a value.
type tplPart struct {
	lit  string
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
				parts = append(parts, tplPart{lit: lit.String()})
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
		parts = append(parts, tplPart{lit: lit.String()})
	}
	return parts, nil
}

// expand renders the template against d.
func (s *source) expand(d *doc) string {
	if len(s.template) == 1 && s.template[0].path == nil {
		return s.template[0].lit
	}
	var b strings.Builder
	for _, p := range s.template {
		if p.path == nil {
			b.WriteString(p.lit)
		} else {
			b.WriteString(d.text(p.path))
		}
	}
	return b.String()
}

// quote returns s as a JSON string.
func quote(s string) []byte {
	b, _ := json.Marshal(s) //nolint:errchkjson // a string always encodes
	return b
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
	if t, ok := r.types[textOf(v)]; ok {
		return t
	}
	return r.types["*"]
}

// frameStart and frameEnd enclose an event to make its chat.event frame.
var (
	frameStart = []byte(`{"type":"` + wire.TypeChatEvent + `","payload":{"type":`)
	doneStart  = []byte(`{"type":"` + wire.TypeChatDone + `","payload":{`)
)

// appendEvents appends the chat.event frames of the message d (the n-th of its stream) to
// frames, and the text of its text-delta events to text when it is not nil; mapped says
// whether any rule applied.
func (m *mapping) appendEvents(frames [][]byte, d *doc, n int, text *strings.Builder) (_ [][]byte, mapped bool) {
	for _, r := range m.rules {
		typ := r.eventType(d, n)
		if typ == "" {
			continue
		}
		mapped = true
		buf := append(make([]byte, 0, 64+len(d.raw)), frameStart...)
		buf = append(buf, quote(typ)...)
		buf, _ = r.members.write(buf, d, false)
		frames = append(frames, append(buf, '}', '}'))
		if text != nil && typ == wire.EventTextDelta {
			if v, ok := r.members.child("text").src.resolve(d); ok {
				text.WriteString(textOf(v))
			}
		}
	}
	return frames, mapped
}

// doneFrame returns the chat.done frame: the concatenated text, then the members taken from
// the last message (nil when the stream had none) and the constants.
func (m *mapping) doneFrame(last []byte, text string) []byte {
	buf := append([]byte(nil), doneStart...)
	first := true
	if m.done.text {
		buf = append(buf, `"text":`...)
		buf = append(buf, quote(text)...)
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
