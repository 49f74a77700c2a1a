package jsonrpc

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"
)

func TestAppendUnquoted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{``, ``, true},
		{`abc`, `abc`, true},
		{`\"\\\/\b\f\n\r\t`, "\"\\/\b\f\n\r\t", true},
		{`\u0041\u00e9\u20AC`, "Aé€", true},
		{`\ud83d\ude00`, "😀", true},
		{`\ud800`, "\ufffd", true},
		{`\udc00`, "\ufffd", true},
		{`\ud800x`, "\ufffdx", true},
		{`\ud800\u0041`, "\ufffdA", true},
		{`\ud800\ud800\udc00`, "\ufffd\U00010000", true},
		{`\ude00\ud83d`, "\ufffd\ufffd", true},
		{"a\xffb", "a\ufffdb", true},
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd", true},
		{"\xe2\x82", "\ufffd\ufffd", true},
		{"héllo", "héllo", true},
		{`\x`, ``, false},
		{`\`, ``, false},
		{`\u12`, ``, false},
		{`\u12g4`, ``, false},
		{`\ud800\u12`, ``, false},
		{"a\nb", ``, false},
		{`a"b`, ``, false},
	}
	for _, tc := range tests {
		got, ok := appendUnquoted(nil, tc.in)
		if ok != tc.ok || (ok && string(got) != tc.want) {
			t.Errorf("appendUnquoted(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
		if !tc.ok {
			continue
		}
		var std string
		if err := json.Unmarshal([]byte(`"`+tc.in+`"`), &std); err != nil || std != string(got) {
			t.Errorf("encoding/json reads %q as %q (%v); appendUnquoted gives %q", tc.in, std, err, got)
		}
	}
}

func TestDecodeRune(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"a", "é", "€", "😀", "\U0010ffff", "\xff", "\xc0\x80", "\xe0\x80\x80", "\xed\xa0\x80",
		"\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xe2\x82", "\xf0\x9f\x98", "\xc2", "\x80"} {
		r1, n1 := decodeRune(s)
		r2, n2 := decodeRune([]byte(s))
		r3, n3 := utf8.DecodeRuneInString(s)
		if r1 != r3 || n1 != n3 || r2 != r3 || n2 != n3 {
			t.Errorf("decodeRune(%q) = %U %d (string), %U %d (bytes); want %U %d", s, r1, n1, r2, n2, r3, n3)
		}
	}
}

func FuzzAppendUnquoted(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, s := range fuzzseed.Strings(f, 256, fuzzseed.Kinds...) {
		q, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(q[1 : len(q)-1]))
	}
	for _, s := range []string{``, `abc`, `\"\\\/\b\f\n\r\t`, `\u00e9\ud83d\ude00`, `\ud800\u0041`, "a\xffb", "\xed\xa0\x80", `\x`, `\u12`, "a\nb", `a"b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := appendUnquoted(nil, s)
		var std string
		err := json.Unmarshal([]byte(`"`+s+`"`), &std)
		if ok != (err == nil) || (ok && string(got) != std) {
			t.Fatalf("appendUnquoted(%q) = %q, %v; encoding/json reads %q, %v", s, got, ok, std, err)
		}
		for i := range len(s) {
			r1, n1 := decodeRune(s[i:])
			r2, n2 := utf8.DecodeRuneInString(s[i:])
			if r1 != r2 || n1 != n2 {
				t.Fatalf("decodeRune(%q) = %U, %d; want %U, %d", s[i:], r1, n1, r2, n2)
			}
		}
	})
}
