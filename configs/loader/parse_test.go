package loader_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/configs/loader"
)

// TestParseErrors covers the document-level problems Parse refuses, all reported at once.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"syntax", "a: b: c\n", []string{`x.yaml:1:4: mapping value is not allowed in this context`}},
		{"tab indent", "a:\n\tb: 1\n", []string{"x.yaml:2:1: found character '\t' that cannot start any token"}},
		{"duplicate keys at every depth", "a: 1\nb:\n  c: 1\n  c: 2\na: 3\nd: {e: 1, e: 2}\n", []string{
			`x.yaml:4:3: duplicate key "c" (first defined at line 3)`,
			`x.yaml:5:1: duplicate key "a" (first defined at line 1)`,
			`x.yaml:6:11: duplicate key "e" (first defined at line 6)`,
		}},
		{"duplicate quoted key", "a: 1\n\"a\": 2\n", []string{`x.yaml:2:1: duplicate key "a" (first defined at line 1)`}},
		{"two documents", "a: 1\n---\nb: 2\n", []string{`x.yaml:2:1: a configuration file holds a single YAML document; remove this one or its "---"`}},
		{"tag", "a: !!str 5\nb: !custom x\n", []string{
			`x.yaml:1:4: YAML tags such as !!str are not supported; quote a value to make it a string`,
			`x.yaml:2:4: YAML tags such as !custom are not supported; quote a value to make it a string`,
		}},
		{"alias before anchor", "a: *x\nb: &x 1\n", []string{`x.yaml:1:4: alias *x does not refer to an anchor defined before it`}},
		{"recursive alias", "a: &x [*x]\n", []string{`x.yaml:1:8: alias *x does not refer to an anchor defined before it`}},
		{"anchor twice", "a: &x 1\nb: &x 2\n", []string{`x.yaml:2:4: anchor &x is defined twice`}},
		{"merge key not first", "a: &x {k: 1}\nb:\n  j: 2\n  <<: *x\n", []string{`x.yaml:4:3: a merge key (<<) must be the first key of its mapping`}},
		{"merge of a list", "a: &x {k: 1}\nb:\n  <<: [*x]\n", []string{`x.yaml:3:3: a merge key (<<) takes one mapping, such as an alias to one`}},
		{"merge of a scalar", "b:\n  <<: 5\n", []string{`x.yaml:2:3: a merge key (<<) takes one mapping, such as an alias to one`}},
		{"anchored key", "&a k: v\n", []string{`x.yaml:1:1: keys must be plain scalars`}},
		{"env and duplicate together", "a: ${NOPE}\na: 2\n", []string{
			`x.yaml:1:4: environment variable NOPE is not set (write ${NOPE:-default} to give a default)`,
			`x.yaml:2:1: duplicate key "a" (first defined at line 1)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := loader.Parse("x.yaml", []byte(tt.yaml), env(nil))
			if err == nil {
				t.Fatal("Parse succeeded, want errors")
			}
			if doc != nil {
				t.Error("Parse returned a Document with an error")
			}
			if got := errorStrings(t, err); !slices.Equal(got, tt.want) {
				t.Errorf("errors\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
			}
		})
	}
}

// TestParseAliasBomb checks that nested aliases cannot expand a small file without bound.
func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString(strings.ReplaceAll("aI: &aI [*aP, *aP, *aP, *aP, *aP, *aP, *aP, *aP, *aP, *aP]\n", "I", string(rune('0'+i))))
		s := b.String()
		b.Reset()
		b.WriteString(strings.ReplaceAll(s, "P", string(rune('0'+i-1))))
	}
	_, err := loader.Parse("bomb.yaml", []byte(b.String()), env(nil))
	if err == nil {
		t.Fatal("Parse succeeded, want an error")
	}
	if got := err.Error(); !strings.Contains(got, "expands to more than") {
		t.Errorf("error %q, want one about expansion", got)
	}
}

// TestParseAnchorsAndMerge checks that aliases and merge keys decode as YAML says and that
// the schema sees what the struct gets.
func TestParseAnchorsAndMerge(t *testing.T) {
	const src = `
batch:
  tiers:
    base: &base {rate: 1.5, burst: 10}
    copy: *base
    merged:
      <<: *base
      burst: 20
routes:
  - &route {path: /a, method: GET}
  - *route
`
	got, _, err := load(t, mustSchema(t), "x.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]tierConfig{
		"base":   {Rate: 1.5, Burst: 10},
		"copy":   {Rate: 1.5, Burst: 10},
		"merged": {Rate: 1.5, Burst: 20},
	}
	if !mapsEqual(got.Batch.Tiers, want) {
		t.Errorf("tiers %+v, want %+v", got.Batch.Tiers, want)
	}
	if len(got.Routes) != 2 || got.Routes[1] != (routeConfig{Path: "/a", Method: "GET"}) {
		t.Errorf("routes %+v, want two copies of /a", got.Routes)
	}

	// An error inside merged content points into the anchor it came from.
	_, _, err = load(t, mustSchema(t), "x.yaml", []byte("batch:\n  tiers:\n    a: &a {rate: 1, brst: 2}\n    b:\n      <<: *a\n"), nil)
	wantErrs := []string{
		`x.yaml:3:21: batch.tiers.a: unknown key "brst" (did you mean "burst"?)`,
		`x.yaml:3:21: batch.tiers.b: unknown key "brst" (did you mean "burst"?)`,
	}
	if got := errorStrings(t, err); !slices.Equal(got, wantErrs) {
		t.Errorf("errors\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(wantErrs, "\n     "))
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
