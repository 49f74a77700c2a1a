package loader

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer formats the library's own messages, for the kinds of violation not translated here.
var printer = message.NewPrinter(language.English)

// translator turns jsonschema's tree of validation errors into positioned Errors with short
// messages for people: `unknown key "bogus"` rather than the library's dump.
type translator struct {
	d    *Document
	s    *Schema
	errs ErrorList
}

// walk translates e and its causes.
func (t *translator) walk(e *jsonschema.ValidationError) {
	at := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			t.walk(c)
		}
	case *kind.AnyOf:
		t.alternatives(e)
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			t.alternatives(e)
		} else {
			t.add(at, "matches more than one of the allowed forms")
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			t.addKey(at, p, unknownKey(p, t.s.props[e.SchemaURL]))
		}
	case *kind.PropertyNames:
		t.addKey(at, k.Property, fmt.Sprintf("key %q is not allowed", k.Property))
	case *kind.Required:
		for _, m := range k.Missing {
			t.add(at, fmt.Sprintf("missing required key %q", m))
		}
	default:
		if msg, ok := describe(e.ErrorKind); ok || len(e.Causes) == 0 {
			if !ok {
				msg = e.ErrorKind.LocalizedString(printer)
			}
			t.add(at, msg)
			return
		}
		for _, c := range e.Causes {
			t.walk(c)
		}
	}
}

// alternatives translates a failed anyOf or oneOf. Alternatives that fail only because the
// value has another type are set aside: when one alternative remains, its errors are the
// answer ("unknown key" inside the long form of a value that also has a short form); when
// none does, the error lists the types allowed.
func (t *translator) alternatives(e *jsonschema.ValidationError) {
	var (
		candidates []ErrorList
		types      []string
		got        string
	)
	for _, c := range e.Causes {
		if want, g, ok := typeOnly(c, pointer(e.InstanceLocation)); ok {
			types, got = append(types, want...), g
			continue
		}
		sub := &translator{d: t.d, s: t.s}
		sub.walk(c)
		candidates = append(candidates, sub.errs)
	}
	switch {
	case len(candidates) == 1:
		t.errs = append(t.errs, candidates[0]...)
	case len(candidates) == 0 && len(types) > 0:
		t.add(e.InstanceLocation, typeMessage(types, got))
	default:
		var firsts []string
		for _, c := range candidates {
			if len(c) > 0 {
				firsts = append(firsts, c[0].Msg)
			}
		}
		msg := "does not match any of the allowed forms"
		if len(firsts) > 0 {
			msg += " (" + strings.Join(firsts, "; or ") + ")"
		}
		t.add(e.InstanceLocation, msg)
	}
}

// typeOnly reports whether every leaf of e is a type mismatch at ptr, and returns the types
// wanted and the type found.
func typeOnly(e *jsonschema.ValidationError, ptr string) (want []string, got string, ok bool) {
	leaves := 0
	ok = true
	visit(e, func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			return
		}
		leaves++
		k, isType := e.ErrorKind.(*kind.Type)
		if !isType || pointer(e.InstanceLocation) != ptr {
			ok = false
			return
		}
		want, got = append(want, k.Want...), k.Got
	})
	return want, got, ok && leaves > 0
}

// visit calls f on e and on every error below it.
func visit(e *jsonschema.ValidationError, f func(*jsonschema.ValidationError)) {
	f(e)
	for _, c := range e.Causes {
		visit(c, f)
	}
}

// add records msg about the value at instance location at.
func (t *translator) add(at []string, msg string) {
	e := Error{File: t.d.file, Path: strings.Join(at, "."), Msg: msg}
	if l := t.d.locs[pointer(at)]; l != nil {
		p := l.pos()
		e.Line, e.Col, e.Path = p.line, p.col, l.path
	}
	t.errs = append(t.errs, e)
}

// addKey records msg about key of the mapping at instance location at, positioned at the key.
func (t *translator) addKey(at []string, key, msg string) {
	e := Error{File: t.d.file, Msg: msg}
	if l := t.d.locs[pointer(at)]; l != nil {
		e.Path = l.path
	}
	if l := t.d.locs[pointer(append(slices.Clip(at), key))]; l != nil {
		e.Line, e.Col = l.key.line, l.key.col
	}
	t.errs = append(t.errs, e)
}

// describe returns a message for the common kinds of violation.
func describe(k jsonschema.ErrorKind) (string, bool) {
	switch k := k.(type) {
	case *kind.Type:
		return typeMessage(k.Want, k.Got), true
	case *kind.Enum:
		if len(k.Want) == 1 {
			return "must be " + jsonValues(k.Want), true
		}
		return "must be one of " + jsonValues(k.Want), true
	case *kind.Const:
		return "must be " + jsonValues([]any{k.Want}), true
	case *kind.Minimum:
		return "must be at least " + ratString(k.Want), true
	case *kind.Maximum:
		return "must be at most " + ratString(k.Want), true
	case *kind.ExclusiveMinimum:
		return "must be greater than " + ratString(k.Want), true
	case *kind.ExclusiveMaximum:
		return "must be less than " + ratString(k.Want), true
	case *kind.MultipleOf:
		return "must be a multiple of " + ratString(k.Want), true
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long", k.Want), true
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long", k.Want), true
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items", k.Want), true
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items", k.Want), true
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d keys", k.Want), true
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d keys", k.Want), true
	case *kind.Pattern:
		return fmt.Sprintf("must match the pattern %q", k.Want), true
	case *kind.Format:
		return "must be a valid " + k.Want, true
	case *kind.UniqueItems:
		return fmt.Sprintf("items [%d] and [%d] must not be equal", k.Duplicates[0], k.Duplicates[1]), true
	case *kind.DependentRequired:
		return fmt.Sprintf("%s must be set when %q is", quoteAll(k.Missing), k.Prop), true
	case *kind.FalseSchema, *kind.Not:
		return "is not allowed here", true
	case *kind.InvalidJsonValue:
		return "must be a finite number", true
	}
	return "", false
}

// typeMessage says which types were wanted, in YAML's words.
func typeMessage(want []string, got string) string {
	names := make([]string, 0, len(want))
	for _, w := range want {
		if n := yamlType(w); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return fmt.Sprintf("expected %s, got %s", strings.Join(names, " or "), yamlType(got))
}

func yamlType(jsonType string) string {
	switch jsonType {
	case "object":
		return "mapping"
	case "array":
		return "list"
	}
	return jsonType
}

// unknownKey is the message for an unknown key, with a suggestion among the keys allowed.
func unknownKey(key string, allowed []string) string {
	msg := fmt.Sprintf("unknown key %q", key)
	best, bestDist := "", 3
	for _, a := range allowed {
		d := editDistance(strings.ToLower(key), strings.ToLower(a))
		if d < bestDist && d < len(key) {
			best, bestDist = a, d
		}
	}
	if best != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", best)
	}
	return msg
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		prev := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			prev, row[j] = row[j], min(row[j]+1, row[j-1]+1, prev+cost)
		}
	}
	return row[len(b)]
}

func jsonValues(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte(fmt.Sprint(v))
		}
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}

func quoteAll(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = strconv.Quote(s)
	}
	return strings.Join(parts, ", ")
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}
