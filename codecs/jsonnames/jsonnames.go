// Package jsonnames checks the member names of a JSON value against the Go type it is
// about to be decoded into, for the strict decoders of the protocols (codecs/nekte,
// codecs/a2a). encoding/json matches a member to a field ignoring case, so "ID" would fill
// id, and keeps the last of two members of one name: a reader that matches names exactly
// would see another value than the gateway. Check refuses both; other unknown members
// are left alone (the protocols ignore additive fields), and values of the wrong JSON
// type are left for json.Unmarshal to report.
package jsonnames

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Problem is a member name Check refuses: Path names the member (or, for an unknown
// member given twice, the object holding it) and Reason says why.
type Problem struct {
	Path, Reason string
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// Check walks raw alongside the type t it will be decoded into and returns the first
// member whose name matches a field only when case is ignored, or that is given twice in
// one object; nil when there is none. Malformed JSON is not its to report: it returns nil.
func Check(raw []byte, t reflect.Type) *Problem { return check(raw, t, "") }

func check(raw []byte, t reflect.Type, path string) *Problem {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == rawMessageType:
		return nil
	case t.Kind() == reflect.Struct && len(raw) > 0 && raw[0] == '{':
		return checkObject(raw, t, path)
	case t.Kind() == reflect.Slice && len(raw) > 0 && raw[0] == '[':
		return checkArray(raw, t.Elem(), path)
	default:
		return nil
	}
}

func checkObject(raw []byte, t reflect.Type, path string) *Problem {
	fields := fieldsOf(t)
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil
	}
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		name, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil
		}
		ft, known := fields.exact[name]
		if seen[name] {
			if known {
				return &Problem{Path: Join(path, name), Reason: "given twice"}
			}
			return &Problem{Path: path, Reason: "has a member name given twice"}
		}
		seen[name] = true
		if !known {
			if want, ok := fields.folded[strings.ToLower(name)]; ok {
				return &Problem{Path: Join(path, want), Reason: "member name must be spelled with this exact case"}
			}
			continue
		}
		if p := check(bytes.TrimSpace(val), ft, Join(path, name)); p != nil {
			return p
		}
	}
	return nil
}

func checkArray(raw []byte, elem reflect.Type, path string) *Problem {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil
	}
	for i, item := range items {
		if p := check(bytes.TrimSpace(item), elem, Index(path, i)); p != nil {
			return p
		}
	}
	return nil
}

// structFields are the JSON member names of a struct type's fields.
type structFields struct {
	exact  map[string]reflect.Type // name → field type
	folded map[string]string       // lower-case name → name
}

var fieldCache sync.Map // reflect.Type → *structFields

func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	f := &structFields{exact: map[string]reflect.Type{}, folded: map[string]string{}}
	for sf := range t.Fields() {
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f.exact[name] = sf.Type
		f.folded[strings.ToLower(name)] = name
	}
	fieldCache.Store(t, f)
	return f
}

// Join is the path of member name of the object at path ("" for the top level).
func Join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// Index is the path of element i of the array at path.
func Index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
