package loader

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"
)

const fuzzSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "a": {"type": "integer", "minimum": 0},
    "b": {"type": "object", "additionalProperties": {"type": "string"}},
    "c": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "object", "required": ["d"]}]}},
    "d": {"type": "string", "pattern": "^[a-z]+$"},
    "e": {}
  }
}`

type fuzzRoot struct {
	A int               `yaml:"a"`
	B map[string]string `yaml:"b"`
	C []any             `yaml:"c"`
	D time.Duration     `yaml:"d"`
	E any               `yaml:"e"`
}

// FuzzParse checks that Parse and Decode never panic, return either a value or an
// ErrorList, and that the values the schema validates are the values goccy decodes.
func FuzzParse(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	// The repository's configurations.
	for i, b := range fuzzseed.Files(f, "configs/*.yaml", "configs/examples/*.yaml", "configs/loader/testdata/*.yaml") {
		f.Add(b, []string{"", "x", "1", "true"}[i%4])
	}
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "8080")
	}
	for _, seed := range []string{
		"a: ${V}\nb: {x: \"${V}\"}\n",
		"a: &x {k: 1}\nb:\n  <<: *x\n  j: 2\nc: [*x, *x]\n",
		"e: |\n  ${V}\n  $$\n",
		"a: 1\na: 2\n",
		"- 1\n- [2, {3: 4}]\n",
		"? a\n: b\n",
		"~: 1\n1: 2\ntrue: 3\n1.5: 4\n",
		"e: [.inf, -.inf, .nan, 0x1F, 0o17, 1_000, 1e3, -0]\n",
		"%YAML 1.2\n---\na: 1\n...\n",
		"a: !!int 5\n",
		"\"\\u0000\": \"\\x00\"\n",
	} {
		f.Add([]byte(seed), "a\nb: c")
	}
	schema, err := CompileSchema([]byte(fuzzSchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, value string) {
		lookup := func(name string) (string, bool) { return value, strings.HasPrefix(name, "V") }
		d, err := Parse("fuzz.yaml", data, lookup)
		if err != nil {
			checkErrorList(t, err)
			return
		}
		var generic any
		switch err := d.Decode(nil, &generic); {
		case err != nil:
			checkErrorList(t, err)
		case d.body != nil:
			if got, want := normalize(d.inst), normalize(generic); !reflect.DeepEqual(got, want) {
				t.Errorf("the schema sees %#v, goccy decodes %#v", got, want)
			}
		}
		var root fuzzRoot
		if err := d.Decode(schema, &root); err != nil {
			checkErrorList(t, err)
		}
		_ = d.Errorf("a.b[0].c", "x")
		_ = d.Has("c[1]")
	})
}

func checkErrorList(t *testing.T, err error) {
	t.Helper()
	var list ErrorList
	ok := errors.As(err, &list)
	if !ok || len(list) == 0 {
		t.Fatalf("error %v (%T) is not a non-empty ErrorList", err, err)
	}
	for _, e := range list {
		if e.Msg == "" {
			t.Errorf("error without a message: %+v", e)
		}
	}
}

// normalize makes JSON values and goccy's generic values comparable.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = normalize(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = normalize(e)
		}
		return s
	case int64:
		return strconv.FormatInt(v, 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case int:
		return strconv.Itoa(v)
	case float64:
		if math.IsNaN(v) {
			return "NaN"
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case nil, string, bool:
		return v
	}
	return fmt.Sprintf("%T(%v)", v, v)
}
