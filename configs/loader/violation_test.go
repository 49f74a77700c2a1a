package loader_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/configs/loader"
)

// TestViolationMessages checks the translation of schema violations into messages for
// people, one small schema per kind.
func TestViolationMessages(t *testing.T) {
	tests := []struct {
		name, schema, yaml string
		want               []string
	}{
		{"const", `{"properties": {"v": {"const": 2}}}`, "v: 3", []string{`x.yaml:1:4: v: must be 2`}},
		{"multipleOf", `{"properties": {"v": {"multipleOf": 5}}}`, "v: 7", []string{`x.yaml:1:4: v: must be a multiple of 5`}},
		{"exclusiveMaximum", `{"properties": {"v": {"exclusiveMaximum": 1.5}}}`, "v: 2", []string{`x.yaml:1:4: v: must be less than 1.5`}},
		{"maxLength", `{"properties": {"v": {"maxLength": 2}}}`, "v: abc", []string{`x.yaml:1:4: v: must be at most 2 characters long`}},
		{"minItems", `{"properties": {"v": {"minItems": 2}}}`, "v: [1]", []string{`x.yaml:1:1: v: must have at least 2 items`}},
		{"maxProperties", `{"properties": {"v": {"maxProperties": 1}}}`, "v: {a: 1, b: 2}", []string{`x.yaml:1:1: v: must have at most 1 keys`}},
		{"uniqueItems", `{"properties": {"v": {"uniqueItems": true}}}`, "v:\n  - a\n  - a\n", []string{`x.yaml:1:1: v: items [0] and [1] must not be equal`}},
		{"format asserted", `{"properties": {"v": {"format": "ipv4"}}}`, "v: 1.2.3", []string{`x.yaml:1:4: v: must be a valid ipv4`}},
		{"format passes", `{"properties": {"v": {"format": "ipv4"}}}`, "v: 1.2.3.4", nil},
		{"false schema", `{"properties": {"v": false}}`, "v: 1", []string{`x.yaml:1:4: v: is not allowed here`}},
		{"not", `{"properties": {"v": {"not": {"type": "string"}}}}`, "v: s", []string{`x.yaml:1:4: v: is not allowed here`}},
		{"dependentRequired", `{"dependentRequired": {"tls": ["cert", "key"]}}`, "tls: true\nkey: k\n", []string{`x.yaml:1:1: "cert" must be set when "tls" is`}},
		{"propertyNames", `{"propertyNames": {"pattern": "^[a-z]+$"}}`, "ok: 1\nNot-OK: 2\n", []string{`x.yaml:2:1: key "Not-OK" is not allowed`}},
		{"oneOf none, types only", `{"properties": {"v": {"oneOf": [{"type": "integer"}, {"type": "boolean"}]}}}`, "v: s",
			[]string{`x.yaml:1:4: v: expected integer or boolean, got string`}},
		{"oneOf none, forms", `{"properties": {"v": {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}}}`, "v: {c: 1}",
			[]string{`x.yaml:1:1: v: does not match any of the allowed forms (missing required key "a"; or missing required key "b")`}},
		{"oneOf both", `{"properties": {"v": {"oneOf": [{"type": "integer"}, {"minimum": 0}]}}}`, "v: 1",
			[]string{`x.yaml:1:4: v: matches more than one of the allowed forms`}},
		{"allOf", `{"properties": {"v": {"allOf": [{"minimum": 5}, {"multipleOf": 2}]}}}`, "v: 3",
			[]string{`x.yaml:1:4: v: must be a multiple of 2`, `x.yaml:1:4: v: must be at least 5`}},
		{"$ref", `{"$defs": {"port": {"type": "integer"}}, "properties": {"v": {"$ref": "#/$defs/port"}}}`, "v: x",
			[]string{`x.yaml:1:4: v: expected integer, got string`}},
		{"root type", `{"type": "object"}`, "just text", []string{`x.yaml:1:1: expected mapping, got string`}},
		{"root required", `{"required": ["a"]}`, "b: 1", []string{`x.yaml:1:1: missing required key "a"`}},
		{"empty file, required", `{"required": ["a"]}`, "", []string{`x.yaml: missing required key "a"`}},
		{"suggestion by case", `{"additionalProperties": false, "properties": {"maxBatch": {}}}`, "maxbatch: 1",
			[]string{`x.yaml:1:1: unknown key "maxbatch" (did you mean "maxBatch"?)`}},
		{"no far suggestion", `{"additionalProperties": false, "properties": {"timeout": {}}}`, "retries: 1",
			[]string{`x.yaml:1:1: unknown key "retries"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := loader.CompileSchema([]byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			doc, err := loader.Parse("x.yaml", []byte(tt.yaml), env(nil))
			if err != nil {
				t.Fatal(err)
			}
			var v any
			err = doc.Decode(s, &v)
			if tt.want == nil {
				if err != nil {
					t.Errorf("Decode: %v, want success", err)
				}
				return
			}
			if got := errorStrings(t, err); !slices.Equal(got, tt.want) {
				t.Errorf("errors\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
			}
		})
	}
}
