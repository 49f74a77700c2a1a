package capability

import (
	"bytes"
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// validatorCacheSize bounds the compiled input schemas kept across snapshots.
const validatorCacheSize = 1024

// schemaURL is the location compiled schemas are registered under; a relative $ref
// resolves against it and is refused like every external reference.
const schemaURL = "urn:gatehouse:capability-input"

// validator is an input schema compiled once. A schema that does not compile (a $ref to
// a document elsewhere, a pattern Go's regexp engine cannot run) validates nothing: the
// backend, which owns the schema, still checks the input.
type validator struct {
	schema *jsonschema.Schema // nil: no validation
	err    error              // why the schema did not compile
}

// validatorCache keeps compiled input schemas by the SHA-256 of the schema text, least
// recently used first out. Invoke asks it only when an entry has no validator yet; the
// entry then keeps the validator, so the hot path takes no lock.
type validatorCache struct {
	mu    sync.Mutex
	limit int
	order *list.List // of *cached, most recent first
	byKey map[[32]byte]*list.Element
}

type cached struct {
	key [32]byte
	v   *validator
}

func newValidatorCache(limit int) *validatorCache {
	return &validatorCache{limit: limit, order: list.New(), byKey: map[[32]byte]*list.Element{}}
}

// get returns the validator of schema, compiling it on a miss.
func (c *validatorCache) get(key [32]byte, schema json.RawMessage) *validator {
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
		v := el.Value.(*cached).v
		c.mu.Unlock()
		return v
	}
	c.mu.Unlock()
	v := compileValidator(schema) // outside the lock; a concurrent miss compiles twice
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		return el.Value.(*cached).v
	}
	c.byKey[key] = c.order.PushFront(&cached{key: key, v: v})
	for c.order.Len() > c.limit {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cached).key)
	}
	return v
}

// len returns how many validators are cached.
func (c *validatorCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// compileValidator compiles an input schema: draft 2020-12 unless it names its draft with
// $schema, external references refused.
func compileValidator(schema json.RawMessage) *validator {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return &validator{err: err}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return &validator{err: err}
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return &validator{err: err}
	}
	return &validator{schema: s}
}

// refuseLoader loads no document: a capability's schema must be self-contained, and the
// gateway does not read files or fetch URLs a backend names.
type refuseLoader struct{}

var errExternalRef = errors.New("external schema references are not loaded")

func (refuseLoader) Load(string) (any, error) { return nil, errExternalRef }

// inputError says where an input breaks its schema and why, without repeating the value.
type inputError struct {
	Path   string // "in", "in.items[2].name"
	Reason string
}

func (e *inputError) Error() string { return e.Path + ": " + e.Reason }

// check validates the JSON text in against v. It returns nil or an *inputError.
func (v *validator) check(in json.RawMessage) error {
	if v.schema == nil {
		if !json.Valid(in) {
			return &inputError{Path: "in", Reason: "must be valid JSON"}
		}
		return nil
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(in))
	if err != nil {
		return &inputError{Path: "in", Reason: "must be valid JSON"}
	}
	err = v.schema.Validate(inst)
	if err == nil {
		return nil
	}
	ve, ok := errors.AsType[*jsonschema.ValidationError](err)
	if !ok {
		return &inputError{Path: "in", Reason: "does not match the input schema"}
	}
	leaf := firstFailure(ve)
	reason, extra := describe(leaf)
	loc := leaf.InstanceLocation
	if extra != "" {
		loc = append(slices.Clip(loc), extra)
	}
	return &inputError{Path: instancePath(inst, loc), Reason: reason}
}

// firstFailure returns the failure to report: among the innermost failures (an anyOf or
// oneOf counts as one), the one at the first instance location, then the first keyword,
// so that the choice does not depend on the validator's map order.
func firstFailure(e *jsonschema.ValidationError) *jsonschema.ValidationError {
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
	return leaves[0]
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

// limitReason describes a failure of one keyword.
func limitReason(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return "must be of type " + strings.Join(k.Want, " or ")
	case *kind.Enum:
		return "must be one of " + jsonList(k.Want)
	case *kind.Const:
		return "must be " + jsonList([]any{k.Want})
	case *kind.Minimum:
		return "must be at least " + k.Want.RatString()
	case *kind.Maximum:
		return "must be at most " + k.Want.RatString()
	case *kind.ExclusiveMinimum:
		return "must be greater than " + k.Want.RatString()
	case *kind.ExclusiveMaximum:
		return "must be less than " + k.Want.RatString()
	case *kind.MultipleOf:
		return "must be a multiple of " + k.Want.RatString()
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long", k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items", k.Want)
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d members", k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d members", k.Want)
	case *kind.Pattern:
		return "must match the pattern " + strconv.Quote(k.Want)
	case *kind.Format:
		return "must be a valid " + k.Want
	case *kind.UniqueItems:
		return fmt.Sprintf("items [%d] and [%d] must not be equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains, *kind.MinContains:
		return "must contain an item that matches the schema"
	case *kind.MaxContains:
		return "contains too many items that match the schema"
	case *kind.AdditionalItems:
		return "has more items than the schema allows"
	case *kind.PropertyNames:
		return "has a member name the schema does not allow"
	case *kind.FalseSchema, *kind.Not:
		return "is not allowed here"
	default:
		return "does not match the schema (" + strings.Join(k.KeywordPath(), "/") + ")"
	}
}

// jsonList writes schema values (never the input's) as JSON, cut short when long.
func jsonList(vs []any) string {
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte("?")
		}
		parts = append(parts, string(b))
	}
	return clip(strings.Join(parts, ", "), 200, "…")
}

// plainMember is a member name written after a dot in paths.
var plainMember = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// instancePath writes a location in the input as "in", "in.a.b", "in.items[2]" or
// `in["odd key"]`, telling array indexes from member names by walking the instance.
func instancePath(inst any, loc []string) string {
	var b strings.Builder
	b.WriteString("in")
	cur := inst
	for _, seg := range loc {
		switch v := cur.(type) {
		case []any:
			b.WriteString("[" + seg + "]")
			if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(v) {
				cur = v[i]
			} else {
				cur = nil
			}
		default:
			if plainMember.MatchString(seg) {
				b.WriteString("." + seg)
			} else {
				b.WriteString("[" + strconv.Quote(seg) + "]")
			}
			if m, ok := v.(map[string]any); ok {
				cur = m[seg]
			} else {
				cur = nil
			}
		}
	}
	return b.String()
}
