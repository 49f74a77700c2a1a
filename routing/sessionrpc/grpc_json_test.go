package sessionrpc

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzMember checks the scanner against encoding/json: for every valid object and key,
// member finds what decoding into a map finds (the last of duplicate keys), byte for byte.
func FuzzMember(f *testing.F) {
	for _, seed := range []struct{ obj, key string }{
		{`{"a":1}`, "a"},
		{` { "a" : "x\"y" , "a":[1,{"b":"]}"}] } `, "a"},
		{`{"n\u0061me":{"s":"}]"},"k\\":null}`, "name"},
		{`{"k\\":true}`, `k\`},
		{`{}`, ""},
		{`[1,2]`, "a"},
		{`{"a":"\ud83d\ude00"}`, "a"},
	} {
		f.Add(seed.obj, seed.key)
	}
	f.Fuzz(func(t *testing.T, obj, key string) {
		if !json.Valid([]byte(obj)) || !utf8.ValidString(obj) {
			return
		}
		var m map[string]json.RawMessage
		isObj := json.Unmarshal([]byte(obj), &m) == nil && m != nil
		want, wantOK := m[key]
		got, ok := member([]byte(obj), key)
		if !isObj {
			if ok {
				t.Fatalf("member(%q, %q) found %q in a non-object", obj, key, got)
			}
			return
		}
		if ok != wantOK || !bytes.Equal(got, want) {
			t.Fatalf("member(%q, %q) = %q, %v; encoding/json finds %q, %v", obj, key, got, ok, want, wantOK)
		}
	})
}

// FuzzQuote checks that quote escapes as encoding/json does, and that textOf reads back
// what quote wrote.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c", "<&>\n\t\x00\x1f", "\u2028\u2029", "\xff\xfe", "läst 😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		got := quote(s)
		if !bytes.Equal(got, want) {
			t.Fatalf("quote(%q) = %s, want %s", s, got, want)
		}
		var back string
		_ = json.Unmarshal(want, &back)
		if txt := textOf(got); txt != back {
			t.Fatalf("textOf(%s) = %q, want %q", got, txt, back)
		}
	})
}
