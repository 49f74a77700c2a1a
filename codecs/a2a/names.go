package a2a

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Case-sensitive member names: encoding/json matches a member to a field ignoring case, so
// "ID" would fill id. checkNames walks the params beside the type they decode into and
// refuses a member whose name equals a field's only when case is ignored, and a name given
// twice in one object (the envelope decoder refuses those already; the walk does not rely
// on it). Other unknown members are ignored, as the specification asks of additive fields.

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func checkNames(raw []byte, t reflect.Type, path string) *Error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == rawMessageType:
		return nil
	case t.Kind() == reflect.Struct && len(raw) > 0 && raw[0] == '{':
		return checkObject(raw, t, path)
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8 && len(raw) > 0 && raw[0] == '[':
		return checkArray(raw, t.Elem(), path)
	default:
		return nil
	}
}

func checkObject(raw []byte, t reflect.Type, path string) *Error {
	fields := fieldsOf(t)
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil //nolint:nilerr // malformed input is reported by json.Unmarshal
	}
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil //nolint:nilerr // as above
		}
		name, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil //nolint:nilerr // as above
		}
		if seen[name] {
			return InvalidParams(joinPath(path, name), "given twice")
		}
		seen[name] = true
		ft, known := fields.exact[name]
		if !known {
			if want, ok := fields.folded[strings.ToLower(name)]; ok {
				return InvalidParams(joinPath(path, want), "member name must be spelled with this exact case")
			}
			continue
		}
		if err := checkNames(bytes.TrimSpace(val), ft, joinPath(path, name)); err != nil {
			return err
		}
	}
	return nil
}

func checkArray(raw []byte, elem reflect.Type, path string) *Error {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil //nolint:nilerr // malformed input is reported by json.Unmarshal
	}
	for i, item := range items {
		if err := checkNames(bytes.TrimSpace(item), elem, path+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	return nil
}

// structFields are the JSON member names of a struct type's fields.
type structFields struct {
	exact  map[string]reflect.Type
	folded map[string]string
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

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
