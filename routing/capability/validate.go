package capability

import (
	"container/list"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend/inputschema"
)

// validatorCacheSize bounds the compiled input schemas kept across snapshots.
const validatorCacheSize = 1024

// validator is an input schema compiled once. A schema that does not compile (a $ref to
// a document elsewhere, a pattern Go's regexp engine cannot run) validates nothing: the
// backend, which owns the schema, still checks the input.
type validator struct {
	schema *inputschema.Schema // nil: no validation
	err    error               // why the schema did not compile
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
// $schema, external references refused (inputschema.Compile, unbounded: the schema is the
// gateway's own or a backend's the operator configured).
func compileValidator(schema json.RawMessage) *validator {
	s, err := inputschema.Compile(schema, inputschema.Limits{})
	if err != nil {
		return &validator{err: err}
	}
	return &validator{schema: s}
}

// inputError says where an input breaks its schema and why, without repeating the value.
type inputError struct {
	Path    string // "in", "in.items[2].name"
	Reason  string
	Keyword string // the schema keyword that failed; empty when the input is not JSON
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
	err := v.schema.Check(in, 1)
	if err == nil {
		return nil
	}
	ie, ok := errors.AsType[*inputschema.Error](err)
	if !ok {
		return &inputError{Path: "in", Reason: "does not match the input schema"}
	}
	return nekteInputError(ie)
}

// nekteInputError describes the first violation of ie in NEKTE's notation.
func nekteInputError(ie *inputschema.Error) *inputError {
	first := ie.Violations[0]
	return &inputError{Path: instancePath(ie.Instance(), first.Location), Reason: first.Reason, Keyword: first.Keyword}
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
