package mcpbackend_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

var canonicalCases = []struct{ in, want string }{
	{`{"b":1,"a":[true,false,null]}`, `{"a":[true,false,null],"b":1}`},
	{` { "z" : { "y" : 2 , "x" : 1 } } `, `{"z":{"x":1,"y":2}}`},
	{`[1.0, 1e2, 1E21, 1e-7, 0.000001, -0, 0.1, 123456789012345678901, 1.5e300, 2e-5]`,
		`[1,100,1e+21,1e-7,0.000001,0,0.1,123456789012345680000,1.5e+300,0.00002]`},
	{`[9007199254740993, 1e400, -1e400, 5e-324, 1.7976931348623157e308]`, `[9007199254740992,null,null,5e-324,1.7976931348623157e+308]`},
	{`"<&> é 😀 \u00e9 \ud83d\ude00 \u2028"`, "\"<&> é 😀 é 😀 \u2028\""},
	{`"\u0001\b\f\n\r\t\"\\\/\u001f\u007f"`, `"\u0001\b\f\n\r\t\"\\/\u001f` + "\x7f" + `"`},
	{`"\ud800 lone \udc00"`, `"\ud800 lone \udc00"`},
	{`{"a":1,"a":2}`, `{"a":2}`},
	{`{"\ue000":1,"😀":2,"a":3}`, `{"a":3,"😀":2,"` + "\ue000" + `":1}`}, // UTF-16 order: U+D83D < U+E000
	{`{}`, `{}`},
	{`[]`, `[]`},
}

func TestCanonicalJSON(t *testing.T) {
	for _, tt := range canonicalCases {
		got, err := mcpbackend.CanonicalJSON([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("CanonicalJSON(%s)\n got  %s (%v)\n want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{``, `{`, `[1,]`, `{"a"}`, `01`, `1.`, `"\x"`, `tru`, `1 2`, `"` + "\x01" + `"`} {
		if _, err := mcpbackend.CanonicalJSON([]byte(bad)); err == nil {
			t.Errorf("CanonicalJSON(%q) accepted invalid JSON", bad)
		}
	}
}

// TestCanonicalJSONMatchesJavaScript checks the cases against node's JSON.stringify with
// sorted keys, the definition CanonicalJSON follows.
func TestCanonicalJSONMatchesJavaScript(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	const js = `
const sort = v => Array.isArray(v) ? v.map(sort) : (v && typeof v === "object")
  ? Object.fromEntries(Object.keys(v).sort().map(k => [k, sort(v[k])])) : v;
let input = ""; process.stdin.on("data", d => input += d).on("end", () => {
  for (const line of JSON.parse(input)) process.stdout.write(JSON.stringify(sort(JSON.parse(line))) + "\n");
});`
	var ins []string
	for _, tt := range canonicalCases {
		ins = append(ins, tt.in)
	}
	payload, _ := json.Marshal(ins)
	cmd := exec.Command("node", "-e", js)
	cmd.Stdin = strings.NewReader(string(payload))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for i, tt := range canonicalCases {
		got, _ := mcpbackend.CanonicalJSON([]byte(tt.in))
		if string(got) != lines[i] {
			t.Errorf("%s:\n go   %s\n node %s", tt.in, got, lines[i])
		}
	}
}

func TestSchemaVersion(t *testing.T) {
	a, err := mcpbackend.SchemaVersion([]byte(`{"type":"object","properties":{"x":{"type":"number"}}}`), nil)
	if err != nil || len(a) != 16 {
		t.Fatalf("%q %v", a, err)
	}
	b, _ := mcpbackend.SchemaVersion([]byte(`{ "properties" : {"x":{"type":"number"}}, "type":"object" }`), nil)
	c, _ := mcpbackend.SchemaVersion([]byte(`{"type":"object","properties":{"x":{"type":"string"}}}`), nil)
	d, _ := mcpbackend.SchemaVersion([]byte(`{"type":"object","properties":{"x":{"type":"number"}}}`), []byte(`{"type":"object"}`))
	if a != b || a == c || a == d {
		t.Fatalf("versions %s %s %s %s", a, b, c, d)
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, tt := range canonicalCases {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := mcpbackend.CanonicalJSON(in)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output %q for %q", out, in)
		}
		again, err := mcpbackend.CanonicalJSON(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q → %q (%v)", out, again, err)
		}
	})
}
