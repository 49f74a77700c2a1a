package nekte_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"golang.org/x/tools/txtar"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

var update = flag.Bool("update", false, "rewrite the compact and minimal sections of testdata/levels/*.txtar")

// TestLevelsGolden runs every testdata/levels/*.txtar: the comment states the rule, the
// "json" or "mcp" section is the result, and the "compact" and "minimal" sections are the
// expected representations (minimal as its text, without quotes).
func TestLevelsGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/levels/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			input, lv := levelsOf(t, ar)
			var full bytes.Buffer
			if err := json.Compact(&full, input); err != nil || !bytes.Equal(lv.Full, full.Bytes()) {
				t.Errorf("full = %s, want the input compacted (%v)", lv.Full, err)
			}
			if !json.Valid(lv.Compact) {
				t.Errorf("compact is not valid JSON: %s", lv.Compact)
			}
			checkMinimal(t, lv.Minimal)
			got := map[string]string{"compact": string(lv.Compact) + "\n", "minimal": lv.Minimal + "\n"}
			if *update {
				writeGolden(t, file, ar, got)
				return
			}
			for _, name := range []string{"compact", "minimal"} {
				if want := section(ar, name); got[name] != want {
					t.Errorf("%s\n got  %s want %s", name, got[name], want)
				}
			}
		})
	}
}

func levelsOf(t *testing.T, ar *txtar.Archive) (json.RawMessage, nekte.Levels) {
	t.Helper()
	for _, f := range ar.Files {
		var (
			lv  nekte.Levels
			err error
		)
		switch f.Name {
		case "json":
			lv, err = nekte.JSONLevels(f.Data)
		case "mcp":
			lv, err = nekte.MCPLevels(f.Data)
		default:
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return f.Data, lv
	}
	t.Fatal("no json or mcp section")
	return nil, nekte.Levels{}
}

// checkMinimal checks the invariants of every minimal line: one non-empty line of valid
// UTF-8 that fits the minimal default budget as a JSON string.
func checkMinimal(t *testing.T, m string) {
	t.Helper()
	q := quote(m)
	if m == "" || strings.ContainsAny(m, "\r\n") || !utf8.ValidString(m) {
		t.Errorf("minimal %q is not one non-empty line", m)
	}
	if n := nekte.Tokens(q); n > nekte.DefaultMinimalTokens {
		t.Errorf("minimal %q is %d tokens, more than %d", m, n, nekte.DefaultMinimalTokens)
	}
}

// quote writes s as a JSON string the way it goes on the wire: without HTML escaping.
func quote(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func section(ar *txtar.Archive, name string) string {
	for _, f := range ar.Files {
		if f.Name == name {
			return string(f.Data)
		}
	}
	return ""
}

func writeGolden(t *testing.T, file string, ar *txtar.Archive, got map[string]string) {
	t.Helper()
	files := ar.Files[:0]
	for _, f := range ar.Files {
		if f.Name != "compact" && f.Name != "minimal" {
			files = append(files, f)
		}
	}
	for _, name := range []string{"compact", "minimal"} {
		files = append(files, txtar.File{Name: name, Data: []byte(got[name])})
	}
	ar.Files = files
	if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRulesOverride(t *testing.T) {
	r := nekte.Rules{MaxString: 3, MaxItems: 2, MaxMembers: 1, MaxDepth: 1, MinimalTokens: 8}
	lv, err := r.JSON([]byte(`{"a":"abcdef","b":[1,2,3],"c":{"d":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"abc…(+3 chars)","…":"+2 members"}`; string(lv.Compact) != want {
		t.Errorf("compact = %s, want %s", lv.Compact, want)
	}
	lv, err = r.JSON([]byte(`[[1],{"x":1},3,4]`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `["[1 item]","{1 member}","…(+2 items)"]`; string(lv.Compact) != want {
		t.Errorf("compact = %s, want %s", lv.Compact, want)
	}
	lv, err = r.JSON([]byte(`"one two three four five six seven eight nine ten eleven"`))
	if err != nil {
		t.Fatal(err)
	}
	if nekte.Tokens(quote(lv.Minimal)) > 8 || !strings.HasSuffix(lv.Minimal, "…") {
		t.Errorf("minimal %q is not cut to 8 tokens", lv.Minimal)
	}
}

func TestLevelsErrors(t *testing.T) {
	tests := []struct {
		name, in string
		mcp      bool
		want     error
	}{
		{"json: not JSON", `{"a":`, false, nekte.ErrInvalidJSON},
		{"json: two values", `1 2`, false, nekte.ErrInvalidJSON},
		{"mcp: not JSON", `{`, true, nekte.ErrInvalidJSON},
		{"mcp: not an object", `[1]`, true, nekte.ErrNotCallToolResult},
		{"mcp: content not an array", `{"content":"x"}`, true, nekte.ErrNotCallToolResult},
		{"mcp: item not an object", `{"content":[1]}`, true, nekte.ErrNotCallToolResult},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.mcp {
				_, err = nekte.MCPLevels([]byte(tt.in))
			} else {
				_, err = nekte.JSONLevels([]byte(tt.in))
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func FuzzJSONLevels(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.Add(f, fuzzseed.JSON, fuzzseed.MCPResult)
	for _, b := range fuzzseed.Members(f, "result", fuzzseed.NEKTEResponse, fuzzseed.A2AResponse) {
		f.Add(b)
	}
	for _, s := range []string{`{"a":[1,2,{"b":"c"}]}`, `"x"`, `[]`, `{"a":"` + strings.Repeat("é", 300) + `"}`, `1e400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		lv, err := nekte.JSONLevels(in)
		if (err == nil) != json.Valid(in) {
			t.Fatalf("JSONLevels(%q) error %v; json.Valid = %v", in, err, json.Valid(in))
		}
		if err != nil {
			return
		}
		if !json.Valid(lv.Compact) || !json.Valid(lv.Full) {
			t.Fatalf("JSONLevels(%q) = %s, %s: not JSON", in, lv.Full, lv.Compact)
		}
		checkMinimal(t, lv.Minimal)
	})
}

func FuzzMCPLevels(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.Add(f, fuzzseed.MCPResult)
	files, _ := filepath.Glob("testdata/levels/mcp_*.txtar")
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err == nil {
			f.Add([]byte(section(ar, "mcp")))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		lv, err := nekte.MCPLevels(in)
		if err != nil {
			return
		}
		if !json.Valid(lv.Compact) || !json.Valid(lv.Full) {
			t.Fatalf("MCPLevels(%q) = %s, %s: not JSON", in, lv.Full, lv.Compact)
		}
		checkMinimal(t, lv.Minimal)
	})
}
