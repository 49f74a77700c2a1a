package canonical_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/gatehouse-dev/gatehouse/codecs/canonical"
)

var canonicalCases = []struct{ name, in, want string }{
	{"sorted keys", `{"b":1,"a":[true,false,null]}`, `{"a":[true,false,null],"b":1}`},
	{"whitespace and nesting", ` { "z" : { "y" : 2 , "x" : 1 } } `, `{"z":{"x":1,"y":2}}`},
	{"numbers", `[1.0, 1e2, 1E21, 1e-7, 0.000001, -0, 0.1, 123456789012345678901, 1.5e300, 2e-5]`,
		`[1,100,1e+21,1e-7,0.000001,0,0.1,123456789012345680000,1.5e+300,0.00002]`},
	{"number range", `[9007199254740993, 1e400, -1e400, 5e-324, 1.7976931348623157e308]`, `[9007199254740992,null,null,5e-324,1.7976931348623157e+308]`},
	{"raw non-ASCII", `"<&> é 😀 \u00e9 \ud83d\ude00 \u2028"`, "\"<&> é 😀 é 😀 \u2028\""},
	{"escapes", `"\u0001\b\f\n\r\t\"\\\/\u001f\u007f"`, `"\u0001\b\f\n\r\t\"\\/\u001f` + "\x7f" + `"`},
	{"lone surrogates", `"\ud800 lone \udc00"`, `"\ud800 lone \udc00"`},
	{"duplicate keys", `{"a":1,"a":2}`, `{"a":2}`},
	{"UTF-16 key order", `{"\ue000":1,"😀":2,"a":3}`, `{"a":3,"😀":2,"` + "\ue000" + `":1}`}, // U+D83D < U+E000
	{"empty object", `{}`, `{}`},
	{"empty array", `[]`, `[]`},
	{"array order kept", `[3,1,2,{"b":[2,1],"a":{}}]`, `[3,1,2,{"a":{},"b":[2,1]}]`},
}

func TestCanonicalJSON(t *testing.T) {
	for _, tt := range canonicalCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := canonical.CanonicalJSON([]byte(tt.in))
			if err != nil || string(got) != tt.want {
				t.Errorf("CanonicalJSON(%s)\n got  %s (%v)\n want %s", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestCanonicalJSONRejects(t *testing.T) {
	tests := []struct{ name, in string }{
		{"empty", ``},
		{"open object", `{`},
		{"trailing comma", `[1,]`},
		{"member without value", `{"a"}`},
		{"leading zero", `01`},
		{"bare fraction", `1.`},
		{"bad escape", `"\x"`},
		{"short literal", `tru`},
		{"two values", `1 2`},
		{"control character", `"` + "\x01" + `"`},
		{"short unicode escape", `"\u12"`},
		{"bad unicode escape", `"\u12g4"`},
		{"no exponent digits", `1e+`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := canonical.CanonicalJSON([]byte(tt.in))
			var se *canonical.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("CanonicalJSON(%q) error %v, want a *SyntaxError", tt.in, err)
			}
			if se.Offset < 0 || se.Offset > len(tt.in) || se.Reason == "" {
				t.Errorf("error %+v", se)
			}
		})
	}
}

func TestCanonicalJSONDepth(t *testing.T) {
	ok := strings.Repeat("[", canonical.MaxDepth+1) + strings.Repeat("]", canonical.MaxDepth+1)
	if _, err := canonical.CanonicalJSON([]byte(ok)); err != nil {
		t.Fatalf("depth %d: %v", canonical.MaxDepth+1, err)
	}
	deep := "[" + ok + "]"
	if _, err := canonical.CanonicalJSON([]byte(deep)); !errors.Is(err, canonical.ErrTooDeep) {
		t.Fatalf("depth %d: got %v, want ErrTooDeep", canonical.MaxDepth+2, err)
	}
}

func TestAppendNumber(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {1, "1"}, {-1.5, "-1.5"}, {100, "100"},
		{1e21, "1e+21"}, {1e20, "100000000000000000000"}, {1e-6, "0.000001"}, {1e-7, "1e-7"},
		{1.5e-7, "1.5e-7"}, {math.Inf(1), "null"}, {math.NaN(), "null"}, {0.30000000000000004, "0.30000000000000004"},
	}
	for _, tt := range tests {
		if got := string(canonical.AppendNumber(nil, tt.in)); got != tt.want {
			t.Errorf("AppendNumber(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestCanonicalJSONMatchesJavaScript checks the cases against node's JSON.stringify with
// sorted keys, the definition CanonicalJSON follows.
func TestCanonicalJSONMatchesJavaScript(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed: the machine make test runs on has it (Node/npm are required)")
		}
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
		got, _ := canonical.CanonicalJSON([]byte(tt.in))
		if string(got) != lines[i] {
			t.Errorf("%s:\n go   %s\n node %s", tt.in, got, lines[i])
		}
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.Add(f, append(fuzzseed.Requests, fuzzseed.Responses...)...)
	for _, tt := range canonicalCases {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := canonical.CanonicalJSON(in)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output %q for %q", out, in)
		}
		again, err := canonical.CanonicalJSON(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q → %q (%v)", out, again, err)
		}
	})
}

func BenchmarkCanonicalJSON(b *testing.B) {
	schema := []byte(`{"type":"object","properties":{"text":{"type":"string","maxLength":10000},` +
		`"lang":{"type":"string","default":"auto"}},"required":["text"],"additionalProperties":false}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(schema)))
	for b.Loop() {
		if _, err := canonical.CanonicalJSON(schema); err != nil {
			b.Fatal(err)
		}
	}
}
