package loader

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Decode validates the document against s and, when it is valid, decodes it strictly into
// out, which must be a non-nil pointer (usually to the server's root config struct). With a
// nil s only the strict decode runs.
//
// On failure the error is an [ErrorList]: every schema violation, each at the line and column
// of the value (or of the key, for an unknown key); or, when the document satisfies the schema
// but not the Go type, the decoder's first error. Keys absent from the document leave their
// fields in out as they were, so out may hold defaults; on error out may be partly written and
// must be discarded.
//
// The schema is the authority on types: goccy converts leniently between scalars (a quoted
// "8080" into an int, 1.9 into an int as 1), so keep the schema's types as strict as the
// struct's.
func (d *Document) Decode(s *Schema, out any) error {
	if v := reflect.ValueOf(out); v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("config: Decode needs a non-nil pointer, not %T", out)
	}
	if s != nil {
		if errs := d.validate(s); len(errs) > 0 {
			return errs
		}
	}
	if d.body == nil {
		return nil
	}
	if err := yaml.NodeToValue(d.body, out, decodeOptions()...); err != nil {
		return ErrorList{d.decodeError(err, reflect.TypeOf(out).Elem())}
	}
	return nil
}

// decodeOptions are goccy's options for the strict decode. Duplicate keys were refused by
// Parse already; goccy's own check would also refuse a key that overrides a merged one.
func decodeOptions() []yaml.DecodeOption {
	return []yaml.DecodeOption{yaml.Strict(), yaml.AllowDuplicateMapKey()}
}

// validate returns every violation of s. A value typed from a substitution that s wants as a
// string is validated as the text substituted, so `password: ${PW}` with PW=1234 is a string.
func (d *Document) validate(s *Schema) ErrorList {
	var force map[string]bool
	inst := d.inst
	for { // each round forces at least one more pointer, of finitely many
		err := s.root.Validate(inst)
		if err == nil {
			return nil
		}
		var verr *jsonschema.ValidationError
		if !errors.As(err, &verr) {
			return ErrorList{{File: d.file, Msg: err.Error()}}
		}
		if force == nil {
			force = map[string]bool{}
		}
		if !d.forceStrings(verr, force) {
			t := &translator{d: d, s: s}
			t.walk(verr)
			if len(t.errs) == 0 { // not expected; never let a violation pass unreported
				return ErrorList{{File: d.file, Msg: verr.Error()}}
			}
			return t.errs.sorted()
		}
		inst, _, _ = d.build(force, false)
	}
}

// forceStrings marks, in force, the typed substitutions that the schema wants as strings and
// reports whether it marked any.
func (d *Document) forceStrings(verr *jsonschema.ValidationError, force map[string]bool) bool {
	changed := false
	visit(verr, func(e *jsonschema.ValidationError) {
		k, ok := e.ErrorKind.(*kind.Type)
		if !ok {
			return
		}
		ptr := pointer(e.InstanceLocation)
		if l := d.locs[ptr]; l != nil && !force[ptr] && k.Got != "string" {
			if _, typed := d.typed[l.node]; typed && slices.Contains(k.Want, "string") {
				force[ptr], changed = true, true
			}
		}
	})
	return changed
}

// decodeError turns goccy's decode error into a positioned Error. Errors from unmarshalers
// (time.Duration, TextUnmarshaler) carry no position: they are located by decoding pruned
// copies of the document until the smallest one that still fails.
func (d *Document) decodeError(err error, typ reflect.Type) Error {
	e := Error{File: d.file, Msg: err.Error()}
	var ye yaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil {
		l := d.locate(err, typ)
		if l != nil {
			p := l.pos()
			e.Line, e.Col, e.Path = p.line, p.col, l.path
		}
		return e
	}
	p := positionOf(ye.GetToken())
	e.Line, e.Col, e.Msg = p.line, p.col, ye.GetMessage()
	var (
		unknown  *yaml.UnknownFieldError
		mismatch *yaml.TypeError
	)
	switch {
	case errors.As(err, &unknown):
		e.Msg = strings.Replace(e.Msg, "unknown field", "unknown key", 1)
		if l := d.at(p, true); l != nil {
			e.Path = l.parent
		}
		return e
	case errors.As(err, &mismatch) && mismatch.DstType != nil && mismatch.SrcType != nil:
		e.Msg = fmt.Sprintf("expected %s, got %s", goTypeName(mismatch.DstType), goTypeName(mismatch.SrcType))
	}
	if l := d.at(p, false); l != nil {
		e.Path = l.path
	}
	return e
}

// at returns the value whose key (key set) or value is at p.
func (d *Document) at(p position, key bool) *loc {
	for _, l := range d.byPos[p] {
		if (key && l.hasKey && l.key == p) || (!key && l.val == p) {
			return l
		}
	}
	return nil
}

// goTypeName names a Go type in the words of the file.
func goTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Map, reflect.Struct:
		return "mapping"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() != reflect.Uint8 {
			return "list"
		}
	case reflect.Pointer:
		return goTypeName(t.Elem())
	}
	return t.String()
}
