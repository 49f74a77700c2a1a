package loader_test

import (
	"errors"
	"testing"

	"github.com/gatehouse-dev/gatehouse/configs/loader"
)

func parseTestdata(t *testing.T, name string) *loader.Document {
	t.Helper()
	doc, err := loader.Parse(name, readTestdata(t, name), env(nil))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return doc
}

// TestErrorf turns dotted paths into positions, falling back to the nearest ancestor present.
func TestErrorf(t *testing.T) {
	doc := parseTestdata(t, "valid.yaml")
	tests := []struct {
		path string
		want string
	}{
		{"listen.port", "valid.yaml:4:9: listen.port: bad"},
		{"listen", "valid.yaml:2:1: listen: bad"},
		{"batch.tiers.enterprise", "valid.yaml:16:5: batch.tiers.enterprise: bad"},
		{"batch.tiers.enterprise.rate", "valid.yaml:14:13: batch.tiers.enterprise.rate: bad"}, // merged from &tier
		{"batch.tiers.enterprise.burst", "valid.yaml:18:14: batch.tiers.enterprise.burst: bad"},
		{"routes[1].method", "valid.yaml:25:13: routes[1].method: bad"},
		{"routes[1]", "valid.yaml:24:5: routes[1]: bad"},
		{"routes", "valid.yaml:20:1: routes: bad"},
		{`labels["x.y"]`, "valid.yaml:34:10: labels[\"x.y\"]: bad"},
		{"routes[7].method", "valid.yaml:20:1: routes[7].method: bad"},           // index absent: the list
		{"batch.tiers.gold.rate", "valid.yaml:12:3: batch.tiers.gold.rate: bad"}, // key absent: tiers
		{"metrics.port", "valid.yaml: metrics.port: bad"},                        // nothing present
		{"", "valid.yaml: bad"},
		{"routes[x", "valid.yaml: routes[x: bad"}, // malformed
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if got := doc.Errorf(tt.path, "%s", "bad").Error(); got != tt.want {
				t.Errorf("Errorf(%q)\n got %q\nwant %q", tt.path, got, tt.want)
			}
		})
	}
}

func TestHas(t *testing.T) {
	doc := parseTestdata(t, "valid.yaml")
	tests := []struct {
		path string
		want bool
	}{
		{"", true},
		{"listen", true},
		{"listen.tls", true},
		{"listen.bogus", false},
		{"batch.tiers.enterprise.rate", true}, // through the merge key
		{"routes[0]", true},
		{"routes[0].target", true},
		{"routes[2]", false},
		{`labels["x.y"]`, true},
		{"labels.x.y", false},
		{"metrics", false},
		{"listen..port", false},
	}
	for _, tt := range tests {
		if got := doc.Has(tt.path); got != tt.want {
			t.Errorf("Has(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
	empty := parseTestdata(t, "empty.yaml")
	if empty.Has("") || empty.Has("listen") {
		t.Error("an empty document has values")
	}
	nulls, err := loader.Parse("x.yaml", []byte("listen:\nbatch: ~\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !nulls.Has("listen") || !nulls.Has("batch") {
		t.Error("keys with null values are not present")
	}
}

func TestHash(t *testing.T) {
	hash := func(src string, vars map[string]string) [32]byte {
		t.Helper()
		doc, err := loader.Parse("x.yaml", []byte(src), env(vars))
		if err != nil {
			t.Fatal(err)
		}
		return doc.Hash()
	}
	const src = "listen:\n  port: ${PORT:-80}\n"
	base := hash(src, map[string]string{"PORT": "8080", "OTHER": "1"})
	tests := []struct {
		name string
		src  string
		vars map[string]string
		same bool
	}{
		{"same input", src, map[string]string{"PORT": "8080", "OTHER": "1"}, true},
		{"unrelated variable changed", src, map[string]string{"PORT": "8080", "OTHER": "2"}, true},
		{"variable changed", src, map[string]string{"PORT": "9090"}, false},
		{"variable unset", src, nil, false},
		{"file changed", src + "# comment\n", map[string]string{"PORT": "8080"}, false},
	}
	for _, tt := range tests {
		if got := hash(tt.src, tt.vars) == base; got != tt.same {
			t.Errorf("%s: same hash = %v, want %v", tt.name, got, tt.same)
		}
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  loader.Error
		want string
	}{
		{loader.Error{File: "a.yaml", Line: 3, Col: 5, Path: "x.y", Msg: "bad"}, "a.yaml:3:5: x.y: bad"},
		{loader.Error{File: "a.yaml", Line: 3, Msg: "bad"}, "a.yaml:3: bad"},
		{loader.Error{File: "a.yaml", Path: "x", Msg: "bad"}, "a.yaml: x: bad"},
		{loader.Error{Line: 1, Col: 2, Msg: "bad"}, "1:2: bad"},
		{loader.Error{Path: "x", Msg: "bad"}, "x: bad"},
		{loader.Error{Msg: "bad"}, "bad"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestErrorList(t *testing.T) {
	_, _, err := load(t, mustSchema(t), "x.yaml", []byte("zz: 1\nlisten: {port: 0}\n"), nil)
	var list loader.ErrorList
	if !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("error %v, want an ErrorList of 2", err)
	}
	if want := "x.yaml:1:1: unknown key \"zz\"\nx.yaml:2:16: listen.port: must be at least 1"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	var one loader.Error
	if !errors.As(err, &one) || one.Line != 1 {
		t.Errorf("errors.As(Error) = %+v, want the first error", one)
	}
}

func TestCompileSchemaErrors(t *testing.T) {
	tests := map[string]string{
		"not JSON":        `{"type": `,
		"invalid schema":  `{"type": "nope"}`,
		"external file":   `{"$ref": "file:///etc/passwd"}`,
		"external URL":    `{"$ref": "https://example.com/schema.json"}`,
		"relative ref":    `{"$ref": "other.json"}`,
		"bad pattern":     `{"pattern": "("}`,
		"minimum as text": `{"minimum": "1"}`,
	}
	for name, schema := range tests {
		if _, err := loader.CompileSchema([]byte(schema)); err == nil {
			t.Errorf("%s: CompileSchema succeeded, want an error", name)
		}
	}
	if _, err := loader.CompileSchema([]byte(`{"$defs": {"a": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}`)); err != nil {
		t.Errorf("internal $ref: %v", err)
	}
}
