package inputschema_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend/inputschema"
)

func TestCompileRefusals(t *testing.T) {
	lim := inputschema.Limits{MaxBytes: 200, MaxDepth: 4, RequireObject: true}
	tests := []struct {
		name, schema, want string // want "" when it compiles
	}{
		{"object", `{"type":"object","properties":{"a":{"type":"string"}}}`, ""},
		{"local ref", `{"type":"object","$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"}}}`, ""},
		{"remote ref", `{"type":"object","properties":{"a":{"$ref":"https://example.invalid/s.json"}}}`, "refers to a document elsewhere"},
		{"relative ref", `{"type":"object","properties":{"a":{"$ref":"other.json"}}}`, "refers to a document elsewhere"},
		{"file ref", `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`, "refers to a document elsewhere"},
		{"too large", `{"type":"object","description":"` + strings.Repeat("x", 200) + `"}`, "more than the 200 allowed"},
		{"too deep", `{"type":"object","properties":{"a":{"properties":{"b":{"properties":{"c":{}}}}}}}`, "levels deep"},
		{"brackets in strings do not count", `{"type":"object","description":"[[[[[[{{{{{"}`, ""},
		{"no type", `{"properties":{}}`, `"type" is not "object"`},
		{"array type", `{"type":"array"}`, `"type" is not "object"`},
		{"boolean schema", `true`, "not an object schema"},
		{"not JSON", `{"type":`, "not valid JSON"},
		{"empty", ``, "no schema"},
		{"bad regex", `{"type":"object","properties":{"a":{"pattern":"(?<=x)"}}}`, "does not compile"},
		{"bad keyword value", `{"type":"object","minProperties":-1}`, "does not compile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := inputschema.Compile([]byte(tt.schema), lim)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if ce, ok := errors.AsType[*inputschema.CompileError](err); err != nil && (!ok || len(ce.Reason) > inputschema.MaxReasonBytes) {
				t.Fatalf("error %v: want a *CompileError of at most %d bytes", err, inputschema.MaxReasonBytes)
			}
		})
	}
}

const person = `{"type":"object","properties":{"name":{"type":"string","minLength":1},"a/b":{"type":"integer"},"t~":{"type":"integer"},` +
	`"tags":{"type":"array","items":{"type":"string"}},"kind":{"enum":["a","b"]},"n":{"type":"integer","maximum":10}},` +
	`"required":["name"],"additionalProperties":false}`

func TestCheck(t *testing.T) {
	s, err := inputschema.Compile([]byte(person), inputschema.Limits{RequireObject: true})
	if err != nil {
		t.Fatal(err)
	}
	type v struct{ ptr, kw, reason string }
	tests := []struct {
		name, in string
		max      int
		want     []v
		more     int
	}{
		{"valid", `{"name":"A","tags":["x"]}`, 8, nil, 0},
		{"missing", `{}`, 8, []v{{"/name", "required", "is required"}}, 0},
		{"deep", `{"name":"A","tags":["x",7]}`, 8, []v{{"/tags/1", "type", "must be of type string"}}, 0},
		{"escaped pointer", `{"name":"A","a/b":"x","t~":"y"}`, 8, []v{{"/a~1b", "type", "must be of type integer"}, {"/t~0", "type", "must be of type integer"}}, 0},
		{"ordered by location", `{"name":"","n":"x","kind":5,"zz":1}`, 8, []v{
			{"/zz", "additionalProperties", "is not allowed"}, {"/kind", "enum", `must be one of "a", "b"`},
			{"/n", "type", "must be of type integer"}, {"/name", "minLength", "must be at least 1 characters long"}}, 0},
		{"bounded", `{"name":"","n":"x","kind":5}`, 2, []v{{"/kind", "enum", `must be one of "a", "b"`}, {"/n", "type", "must be of type integer"}}, 1},
		{"not an object", `[1]`, 8, []v{{"", "type", "must be of type object"}}, 0},
		{"not JSON", `{nope`, 8, []v{{"", "", "must be valid JSON"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Check([]byte(tt.in), tt.max)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			ie, ok := errors.AsType[*inputschema.Error](err)
			if !ok {
				t.Fatalf("got %v, want an *inputschema.Error", err)
			}
			var got []v
			for _, x := range ie.Violations {
				got = append(got, v{x.Pointer(), x.Keyword, x.Reason})
			}
			if len(got) != len(tt.want) || ie.More != tt.more {
				t.Fatalf("got %v (+%d), want %v (+%d)", got, ie.More, tt.want, tt.more)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("violation %d: got %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestReasonClipped checks that a reason quoting a long schema value is cut.
func TestReasonClipped(t *testing.T) {
	long := strings.Repeat("é", 300)
	s, err := inputschema.Compile([]byte(`{"type":"object","properties":{"k":{"enum":["`+long+`"]}}}`), inputschema.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ie, _ := errors.AsType[*inputschema.Error](s.Check([]byte(`{"k":1}`), 1))
	if ie == nil || len(ie.Violations[0].Reason) > inputschema.MaxReasonBytes || !strings.HasSuffix(ie.Violations[0].Reason, "…") {
		t.Fatalf("got %v, want a reason of at most %d bytes ending in …", ie, inputschema.MaxReasonBytes)
	}
}

// FuzzCheck checks that any input is either accepted or refused with at least one and at
// most the asked number of violations, each with a bounded reason and a pointer.
func FuzzCheck(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for i, b := range fuzzseed.Find(f, "arguments", fuzzseed.MCPRequest) {
		f.Add(b, 1+i%4)
	}
	s, err := inputschema.Compile([]byte(person), inputschema.Limits{RequireObject: true})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{`{}`, `{"name":"A"}`, `{"name":"","n":"x","kind":5,"zz":1}`, `[1]`, `{nope`, `{"a/b":"x"}`, `null`} {
		f.Add([]byte(seed), 3)
	}
	f.Fuzz(func(t *testing.T, in []byte, maxErrors int) {
		maxErrors = max(1, min(maxErrors, 16))
		err := s.Check(in, maxErrors)
		if err == nil {
			return
		}
		ie, ok := errors.AsType[*inputschema.Error](err)
		if !ok || len(ie.Violations) == 0 || len(ie.Violations) > maxErrors || ie.More < 0 {
			t.Fatalf("Check(%q, %d) = %v", in, maxErrors, err)
		}
		for _, v := range ie.Violations {
			if len(v.Reason) > inputschema.MaxReasonBytes || (v.Pointer() != "" && v.Pointer()[0] != '/') {
				t.Fatalf("Check(%q): violation %+v", in, v)
			}
		}
	})
}
