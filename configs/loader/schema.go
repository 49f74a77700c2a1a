package loader

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaURL names the compiled schema; nothing is ever fetched from it.
const schemaURL = "https://gatehouse.invalid/config.schema.json"

// Schema is a compiled JSON Schema that Decode validates documents against. It is safe for
// concurrent use; compile it once and reuse it across reloads.
type Schema struct {
	root *jsonschema.Schema
	// props holds, for each subschema that declares properties, their names, by the
	// subschema's location, to suggest a key for an unknown one.
	props map[string][]string
}

// CompileSchema compiles a JSON Schema document, by default of draft 2020-12. The schema must
// be self-contained: a $ref to anything outside it (a file or URL) is an error, so that
// compiling never reads the file system or the network. "format" is asserted ("ipv4",
// "hostname", "uri", ...). Write "additionalProperties": false on every object to make unknown
// keys errors.
func CompileSchema(jsonSchema []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(jsonSchema))
	if err != nil {
		return nil, fmt.Errorf("config: reading JSON schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("config: compiling JSON schema: %w", err)
	}
	root, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("config: compiling JSON schema: %w", err)
	}
	s := &Schema{root: root, props: map[string][]string{}}
	s.index(root, map[*jsonschema.Schema]bool{})
	return s, nil
}

// refuseLoader refuses to load any schema other than the one compiled.
type refuseLoader struct{}

func (refuseLoader) Load(string) (any, error) {
	return nil, errors.New("schemas must be self-contained: references outside the schema are not loaded")
}

// index records the property names of sch and of every subschema reachable from it.
func (s *Schema) index(sch *jsonschema.Schema, seen map[*jsonschema.Schema]bool) {
	if sch == nil || seen[sch] {
		return
	}
	seen[sch] = true
	if len(sch.Properties) > 0 {
		s.props[sch.Location] = slices.Sorted(maps.Keys(sch.Properties))
	}
	for _, sub := range subschemas(sch) {
		s.index(sub, seen)
	}
}

// subschemas returns the schemas sch applies to its instance or to parts of it.
func subschemas(sch *jsonschema.Schema) []*jsonschema.Schema {
	subs := []*jsonschema.Schema{
		sch.Ref, sch.RecursiveRef, sch.Not, sch.If, sch.Then, sch.Else, sch.PropertyNames,
		sch.UnevaluatedProperties, sch.Contains, sch.Items2020, sch.UnevaluatedItems, sch.ContentSchema,
	}
	if sch.DynamicRef != nil {
		subs = append(subs, sch.DynamicRef.Ref)
	}
	subs = append(subs, sch.AllOf...)
	subs = append(subs, sch.AnyOf...)
	subs = append(subs, sch.OneOf...)
	subs = append(subs, sch.PrefixItems...)
	subs = slices.AppendSeq(subs, maps.Values(sch.Properties))
	subs = slices.AppendSeq(subs, maps.Values(sch.PatternProperties))
	subs = slices.AppendSeq(subs, maps.Values(sch.DependentSchemas))
	for _, v := range []any{sch.AdditionalProperties, sch.Items, sch.AdditionalItems} {
		switch v := v.(type) {
		case *jsonschema.Schema:
			subs = append(subs, v)
		case []*jsonschema.Schema:
			subs = append(subs, v...)
		}
	}
	for _, v := range sch.Dependencies {
		if v, ok := v.(*jsonschema.Schema); ok {
			subs = append(subs, v)
		}
	}
	return subs
}
