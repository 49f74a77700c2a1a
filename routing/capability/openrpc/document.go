package openrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// document is the OpenRPC Document (spec: "OpenRPC Object").
type document struct {
	OpenRPC    string     `json:"openrpc"`
	Info       info       `json:"info"`
	Servers    []Server   `json:"servers,omitempty"`
	Methods    []method   `json:"methods"`
	Components components `json:"components"`
	// CatalogVersion is the capability catalog's version (nekte.discover's v).
	CatalogVersion string `json:"x-catalog-version,omitempty"`
}

type info struct {
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	Version     string `json:"version"`
}

type method struct {
	Name           string       `json:"name"`
	Summary        string       `json:"summary,omitempty"`
	Description    string       `json:"description,omitempty"`
	Tags           []tag        `json:"tags,omitempty"`
	ParamStructure string       `json:"paramStructure,omitempty"`
	Params         []descriptor `json:"params"`
	Result         *descriptor  `json:"result,omitempty"`
	Errors         []errorRef   `json:"errors,omitempty"`
}

type tag struct {
	Name string `json:"name"`
}

// descriptor is a Content Descriptor Object.
type descriptor struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Required    bool            `json:"required,omitempty"`
	Schema      json.RawMessage `json:"schema"`
}

type errorRef struct {
	Ref string `json:"$ref"`
}

type errorObject struct {
	Code    schemas.Code `json:"code"`
	Message string       `json:"message"`
}

type components struct {
	Errors  map[string]errorObject     `json:"errors,omitempty"`
	Schemas map[string]json.RawMessage `json:"schemas,omitempty"`
}

// builder gathers the methods of a document and the components they refer to.
type builder struct {
	common  []schemas.Code
	seen    map[string]bool
	methods []method
	errors  map[string]errorObject
	schemas map[string]json.RawMessage
}

func newBuilder(common []schemas.Code) *builder {
	return &builder{common: common, seen: map[string]bool{}, errors: map[string]errorObject{}, schemas: map[string]json.RawMessage{}}
}

// add appends m's method object, unless a method of its name is in already.
func (b *builder) add(m Method) {
	if m.Name == "" || b.seen[m.Name] {
		return
	}
	b.seen[m.Name] = true
	out := method{Name: m.Name, Summary: summary(m.Description), Description: m.Description}
	if out.Description == out.Summary {
		out.Description = ""
	}
	if m.Category != "" {
		out.Tags = []tag{{Name: m.Category}}
	}
	params := b.schema(m.Params, m.Name+".params")
	if props, ok := objectProperties(params); ok {
		out.ParamStructure = "by-name"
		out.Params = props
	} else {
		out.Params = []descriptor{{Name: "params", Schema: params}}
	}
	out.Result = &descriptor{Name: "result", Schema: b.schema(m.Result, m.Name+".result")}
	for _, c := range append(append([]schemas.Code(nil), b.common...), m.Errors...) {
		out.Errors = b.errorRef(out.Errors, c)
	}
	b.methods = append(b.methods, out)
}

// errorRef appends the reference to code's component (adding it) unless refs has it.
func (b *builder) errorRef(refs []errorRef, code schemas.Code) []errorRef {
	k := schemas.KindOf(code)
	ref := errorRef{Ref: "#/components/errors/" + k.Name}
	if slices.Contains(refs, ref) {
		return refs
	}
	b.errors[k.Name] = errorObject{Code: k.Code, Message: k.Message}
	return append(refs, ref)
}

// schema returns s ({} when empty). A schema with local references ($ref "#…") is kept
// whole under components.schemas[key], and the references of the copy returned point
// into it, so that parts cut from the copy still resolve in the document.
func (b *builder) schema(s json.RawMessage, key string) json.RawMessage {
	s = bytes.TrimSpace(s)
	if len(s) == 0 || string(s) == "null" {
		return json.RawMessage(`{}`)
	}
	if !bytes.Contains(s, []byte(`"$ref"`)) {
		return s
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(s))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return s
	}
	base := "#/components/schemas/" + pointerEscape(key)
	if !rewriteRefs(v, base) {
		return s
	}
	out := marshal(v)
	b.schemas[key] = out
	return out
}

// rewriteRefs points every local $ref in v ("#", "#/…") under base; it reports whether
// there was one.
func rewriteRefs(v any, base string) bool {
	found := false
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if ref, ok := x.(string); ok && k == "$ref" && strings.HasPrefix(ref, "#") {
				v[k] = base + ref[1:]
				found = true
				continue
			}
			found = rewriteRefs(x, base) || found
		}
	case []any:
		for _, x := range v {
			found = rewriteRefs(x, base) || found
		}
	}
	return found
}

// pointerEscape escapes a JSON Pointer reference token (RFC 6901).
func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// marshal writes v as JSON without HTML escaping.
func marshal(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // decoded JSON always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

// objectProperties returns one descriptor per top-level property of an object schema, in
// the schema's order, required when its "required" lists it; false when s is not an
// object schema ("type": "object", or "properties" and no type).
func objectProperties(s json.RawMessage) ([]descriptor, bool) {
	var top struct {
		Type       json.RawMessage `json:"type"`
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(s, &top) != nil {
		return nil, false
	}
	switch typ := strings.TrimSpace(string(top.Type)); {
	case typ == `"object"`:
	case typ == "" && len(top.Properties) > 0:
	default:
		return nil, false
	}
	props, err := orderedMembers(top.Properties)
	if err != nil {
		return nil, false
	}
	out := make([]descriptor, 0, len(props))
	for _, p := range props {
		var d struct {
			Description string `json:"description"`
		}
		_ = json.Unmarshal(p.value, &d) // a boolean schema has no description
		out = append(out, descriptor{Name: p.name, Description: d.Description, Required: slices.Contains(top.Required, p.name), Schema: p.value})
	}
	return out, true
}

type member struct {
	name  string
	value json.RawMessage
}

// orderedMembers returns the members of a JSON object in their order; none for empty.
func orderedMembers(raw json.RawMessage) ([]member, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, errNotObject
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string) // an object's keys are strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{name: name, value: v})
	}
	return out, nil
}

// errNotObject refuses "properties" that are not an object.
var errNotObject = errors.New("not a JSON object")

// summary is the first sentence of a description: up to the first ". " or the end.
func summary(desc string) string {
	desc = strings.TrimSpace(desc)
	if i := strings.Index(desc, ". "); i >= 0 {
		return desc[:i+1]
	}
	return desc
}
