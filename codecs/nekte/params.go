package nekte

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"unicode/utf16"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonnames"
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
	if pr := jsonnames.Check(raw, reflect.TypeOf(p)); pr != nil {
		return &ParamError{Field: pr.Path, Reason: pr.Reason}
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
