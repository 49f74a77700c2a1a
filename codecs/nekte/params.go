package nekte

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Params is implemented by the params type of every NEKTE method. Validate reports the
// first field that breaks the wire contract, as a *ParamError.
type Params interface {
	Validate() error
}

// ParamError says which field of a method's params is wrong and why. It never repeats the
// offending value.
type ParamError struct {
	// Field is the path of the field in dot and bracket form ("task.budget.max_tokens",
	// "checks[1]"), with the wire's member names; empty for params as a whole.
	Field string
	// Reason says what the field must be.
	Reason string
}

// Error returns "field: reason", or "params: reason" for params as a whole.
func (e *ParamError) Error() string {
	if e.Field == "" {
		return "params: " + e.Reason
	}
	return e.Field + ": " + e.Reason
}

// Code returns the JSON-RPC code of the error: always CodeInvalidParams.
func (e *ParamError) Code() schemas.Code { return schemas.CodeInvalidParams }

// Decode reads the raw params of a request into p and validates them. Absent or null
// params read as an empty object. Member names are matched case-sensitively: a member
// whose name equals a field's name only when case is ignored ("Forward" for "forward") is
// an error, and so is a name given twice in one object, so that no spelling can smuggle a
// value past a reader that matches names exactly. Other unknown members are ignored, as
// the reference implementation ignores them. Every error is a *ParamError.
func Decode(raw []byte, p Params) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == jsonNull {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return &ParamError{Reason: "must be an object"}
	}
	if !json.Valid(raw) {
		return &ParamError{Reason: reasonJSON}
	}
	if err := checkNames(raw, reflect.TypeOf(p), ""); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, p); err != nil {
		return unmarshalError(err)
	}
	return p.Validate()
}

// unmarshalError turns an encoding/json error into a *ParamError.
func unmarshalError(err error) error {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return &ParamError{Field: te.Field, Reason: "must be " + describeType(te.Type)}
	}
	return &ParamError{Reason: reasonJSON}
}

// describeType names a Go type the way a JSON author knows it.
func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer within range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	default:
		return "a valid value"
	}
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// checkNames walks raw alongside the type t it will be decoded into, and rejects member
// names that match a field only case-insensitively and names repeated in one object.
// Values of the wrong JSON type are left for json.Unmarshal to report.
func checkNames(raw []byte, t reflect.Type, path string) error {
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

func checkObject(raw []byte, t reflect.Type, path string) error {
	fields := fieldsOf(t)
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
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
		ft, known := fields.exact[name]
		if seen[name] {
			if known {
				return &ParamError{Field: joinPath(path, name), Reason: "given twice"}
			}
			return &ParamError{Field: path, Reason: "has a member name given twice"}
		}
		seen[name] = true
		if !known {
			if want, ok := fields.folded[strings.ToLower(name)]; ok {
				return &ParamError{Field: joinPath(path, want), Reason: "member name must be spelled with this exact case"}
			}
			continue
		}
		if err := checkNames(bytes.TrimSpace(val), ft, joinPath(path, name)); err != nil {
			return err
		}
	}
	return nil
}

func checkArray(raw []byte, elem reflect.Type, path string) error {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil //nolint:nilerr // malformed input is reported by json.Unmarshal
	}
	for i, item := range items {
		if err := checkNames(bytes.TrimSpace(item), elem, indexPath(path, i)); err != nil {
			return err
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

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// length returns the length of s as JavaScript's String.prototype.length counts it (UTF-16
// code units), which is what the reference validator's limits count.
func length(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// Reasons shared by several checks.
const (
	reasonNegative = "must not be negative"
	reasonJSON     = "must be valid JSON"
)

// checkString reports an empty required string or one longer than limit (0: no limit).
func checkString(field, s string, required bool, limit int) error {
	switch {
	case required && s == "":
		return &ParamError{Field: field, Reason: "is required"}
	case limit > 0 && length(s) > limit:
		return &ParamError{Field: field, Reason: "must be at most " + strconv.Itoa(limit) + " characters"}
	default:
		return nil
	}
}
