// Package inputschema compiles the JSON Schema of a tool's input once and checks inputs
// against it, reporting each failure by its JSON pointer, its keyword and a short reason
// that never repeats the offending value.
//
// Compiling is bounded: a schema larger or deeper than its Limits is refused before it is
// parsed, and no $ref is ever loaded from elsewhere (a file, a URL): a schema must be
// self-contained. Checking never allocates more than the instance's parse and the failures
// reported.
package inputschema

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Limits bound what Compile accepts. Zero fields are unbounded.
type Limits struct {
	// MaxBytes is the largest schema text, in bytes.
	MaxBytes int
	// MaxDepth is the deepest nesting of objects and arrays in the schema text.
	MaxDepth int
	// RequireObject refuses a schema that does not describe a JSON object: a boolean
	// schema, or an object schema whose "type" is missing or not "object" (MCP requires
	// a tool's inputSchema to be {"type": "object", …}).
	RequireObject bool
}

// MaxReasonBytes bounds the reason of one failure; a longer one is cut and ends in "…".
const MaxReasonBytes = 200

// schemaURL is where a compiled schema is registered; a relative $ref resolves against it
// and is refused like any other external reference.
const schemaURL = "https://gatehouse.invalid/tool-input.json"

// Schema is a compiled input schema, safe for concurrent use.
type Schema struct {
	s *jsonschema.Schema
}

// ErrExternalRef is the cause of a schema refused for a $ref to a document elsewhere.
var ErrExternalRef = errors.New("external schema references are not loaded")

// CompileError says why a schema was refused.
type CompileError struct {
	Reason string
}

func (e *CompileError) Error() string { return e.Reason }

// Compile compiles raw (draft 2020-12 unless it names its draft with $schema) within lim.
// Errors are *CompileError.
func Compile(raw []byte, lim Limits) (*Schema, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, &CompileError{Reason: "there is no schema"}
	}
	if lim.MaxBytes > 0 && len(raw) > lim.MaxBytes {
		return nil, &CompileError{Reason: fmt.Sprintf("the schema is %d bytes, more than the %d allowed", len(raw), lim.MaxBytes)}
	}
	if d := depth(raw); lim.MaxDepth > 0 && d > lim.MaxDepth {
		return nil, &CompileError{Reason: fmt.Sprintf("the schema nests %d levels deep, more than the %d allowed", d, lim.MaxDepth)}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, &CompileError{Reason: "the schema is not valid JSON"}
	}
	if lim.RequireObject {
		if err := objectSchema(doc); err != nil {
			return nil, err
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, &CompileError{Reason: clip("the schema does not compile: " + err.Error())}
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		reason := "the schema does not compile: " + err.Error()
		if _, ok := errors.AsType[*jsonschema.LoadURLError](err); ok || errors.Is(err, ErrExternalRef) {
			reason = "the schema refers to a document elsewhere ($ref), which is not loaded"
		}
		return nil, &CompileError{Reason: clip(reason)}
	}
	return &Schema{s: s}, nil
}

// objectSchema refuses a schema that does not describe an object.
func objectSchema(doc any) error {
	m, ok := doc.(map[string]any)
	if !ok {
		return &CompileError{Reason: `the schema is not an object schema ({"type": "object", …})`}
	}
	if t, ok := m["type"].(string); !ok || t != "object" {
		return &CompileError{Reason: `the schema's "type" is not "object"`}
	}
	return nil
}

// depth returns the deepest nesting of objects and arrays in the JSON text raw, counting
// brackets outside strings. Malformed text is left to the parser.
func depth(raw []byte) int {
	d, most, inString := 0, 0, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}

// refuseLoader loads no document: the gateway does not read files or fetch URLs a
// backend names.
type refuseLoader struct{}

func (refuseLoader) Load(string) (any, error) { return nil, ErrExternalRef }

// Violation is one way an input breaks its schema.
type Violation struct {
	// Location is the failing value's location in the input, one member name or array
	// index per step; for a missing or extra member, the member itself.
	Location []string
	// Keyword is the schema keyword that failed ("type", "required", "maximum", …).
	Keyword string
	// Reason says what the keyword requires, without the offending value.
	Reason string
}

// Pointer returns Location as a JSON pointer (RFC 6901): "" for the input itself,
// "/items/2/name" below it.
func (v Violation) Pointer() string {
	var b strings.Builder
	for _, seg := range v.Location {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(seg))
	}
	return b.String()
}

// Error is an input its schema refuses: the first failures by location, then keyword.
type Error struct {
	// Violations are at most the number asked for, at least one.
	Violations []Violation
	// More counts the failures found beyond Violations.
	More int
	inst any
}

// Error returns "pointer: reason" of the first violation.
func (e *Error) Error() string {
	v := e.Violations[0]
	return "input " + strconv.Quote(v.Pointer()) + ": " + v.Reason
}

// Instance returns the parsed input (nil when it was not JSON), so that a caller can
// describe a location in its own notation.
func (e *Error) Instance() any { return e.inst }

// Check validates the JSON text in against s and returns nil or an *Error with at most
// maxErrors violations (at least one).
func (s *Schema) Check(in []byte, maxErrors int) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(in))
	if err != nil {
		return &Error{Violations: []Violation{{Keyword: "", Reason: "must be valid JSON"}}}
	}
	err = s.s.Validate(inst)
	if err == nil {
		return nil
	}
	ve, ok := errors.AsType[*jsonschema.ValidationError](err)
	if !ok {
		return &Error{Violations: []Violation{{Reason: "does not match the input schema"}}, inst: inst}
	}
	leaves := failures(ve)
	n := min(len(leaves), max(maxErrors, 1))
	out := &Error{Violations: make([]Violation, 0, n), More: len(leaves) - n, inst: inst}
	for _, leaf := range leaves[:n] {
		reason, member := describe(leaf)
		loc := leaf.InstanceLocation
		if member != "" {
			loc = append(slices.Clip(loc), member)
		}
		out.Violations = append(out.Violations, Violation{Location: loc, Keyword: keyword(leaf.ErrorKind), Reason: clip(reason)})
	}
	return out
}

// keyword returns the keyword of a failure: the last step of its keyword path.
func keyword(k jsonschema.ErrorKind) string {
	p := k.KeywordPath()
	if len(p) == 0 {
		return ""
	}
	return p[len(p)-1]
}

// failures returns the failures to report, in order: the innermost failures (an anyOf or
// oneOf counts as one), by instance location then keyword, so that the order does not
// depend on the validator's map order.
func failures(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	var leaves []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		switch e.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			leaves = append(leaves, e)
			return
		}
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(e)
	slices.SortStableFunc(leaves, func(a, b *jsonschema.ValidationError) int {
		if c := slices.Compare(a.InstanceLocation, b.InstanceLocation); c != 0 {
			return c
		}
		return strings.Compare(strings.Join(a.ErrorKind.KeywordPath(), "/"), strings.Join(b.ErrorKind.KeywordPath(), "/"))
	})
	return leaves
}

// describe says what a failure requires, without the offending value, and names the
// member the failure is about when it is below the failing location (a missing or extra
// property).
func describe(e *jsonschema.ValidationError) (reason, member string) {
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		return "is required", k.Missing[0]
	case *kind.AdditionalProperties:
		return "is not allowed", slices.Min(k.Properties)
	case *kind.DependentRequired:
		return fmt.Sprintf("is required when %q is set", k.Prop), k.Missing[0]
	case *kind.Dependency:
		return fmt.Sprintf("is required when %q is set", k.Prop), k.Missing[0]
	case *kind.AnyOf, *kind.OneOf:
		return alternatives(e), ""
	}
	return limitReason(e.ErrorKind), ""
}

// alternatives describes a failed anyOf or oneOf: the types allowed when every branch
// failed on its type alone, else a general message.
func alternatives(e *jsonschema.ValidationError) string {
	if k, ok := e.ErrorKind.(*kind.OneOf); ok && len(k.Subschemas) > 1 {
		return "must match exactly one alternative of the schema; it matches several"
	}
	var want []string
	for _, c := range e.Causes {
		t, ok := c.ErrorKind.(*kind.Type)
		if !ok || len(c.Causes) > 0 {
			return "must match one alternative of the schema"
		}
		want = append(want, t.Want...)
	}
	slices.Sort(want)
	return "must be of type " + strings.Join(slices.Compact(want), " or ")
}
