package transcode_test

import (
	"errors"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/transcode"
)

// TestStrictNumbers checks Options.StrictNumbers: a quoted integer, which proto3 JSON
// accepts, is refused naming the field, wherever the integer is (a scalar, a repeated
// element, a map value, a wrapper); bare integers, quoted floats and integer map keys still
// pass; without the option the quoted forms pass as before.
func TestStrictNumbers(t *testing.T) {
	const quoted = "want integer as a JSON number, got string (strict_numbers)"
	tests := []struct {
		msg, doc string
		path     string // "" when the document is accepted under StrictNumbers
	}{
		{"Scalars", `{"fInt32":"42"}`, "fInt32"},
		{"Scalars", `{"fInt64":"9223372036854775807"}`, "fInt64"},
		{"Scalars", `{"fUint64":"1"}`, "fUint64"},
		{"Scalars", `{"fSint32":"-1"}`, "fSint32"},
		{"Scalars", `{"fFixed64":"7"}`, "fFixed64"},
		{"Scalars", `{"fSfixed32":"7"}`, "fSfixed32"},
		{"Repeateds", `{"rInt64":[1,"2"]}`, "rInt64[1]"},
		{"Maps", `{"i32":{"1":"2"}}`, `i32["1"]`},
		{"WellKnown", `{"wInt64":"5"}`, "wInt64"},
		{"Scalars", `{"fInt32":42,"fInt64":-7,"fUint64":18446744073709551615}`, ""},
		{"Scalars", `{"fDouble":"1.5","fFloat":"NaN"}`, ""},
		{"Maps", `{"i32":{"1":2},"i64":{"-3":"x"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			md := desc(t, tt.msg)
			strict, err := transcode.Compile(md, transcode.Options{StrictNumbers: true, Resolver: schemaTypes})
			if err != nil {
				t.Fatal(err)
			}
			_, err = strict.EncodeJSON(nil, []byte(tt.doc))
			if tt.path == "" {
				if err != nil {
					t.Fatalf("strict: %v, want accepted", err)
				}
			} else {
				pe, ok := errors.AsType[*transcode.PathError](err)
				if !ok || pe.Path != tt.path || pe.Reason != quoted {
					t.Fatalf("strict: %v, want %s: %s", err, tt.path, quoted)
				}
			}
			if _, err := plan(t, md, false, false).EncodeJSON(nil, []byte(tt.doc)); err != nil {
				t.Fatalf("lenient: %v, want accepted", err)
			}
		})
	}
}

// TestStrictNumbersAllocs checks that the strict check costs no allocation on bare numbers.
func TestStrictNumbersAllocs(t *testing.T) {
	md := desc(t, "Scalars")
	strict, err := transcode.Compile(md, transcode.Options{StrictNumbers: true, Resolver: schemaTypes})
	if err != nil {
		t.Fatal(err)
	}
	doc := []byte(`{"fInt32":42,"fInt64":-7,"fUint64":1}`)
	buf := make([]byte, 0, 256)
	lenient := plan(t, md, false, false)
	base := testing.AllocsPerRun(100, func() { _, _ = lenient.EncodeJSON(buf[:0], doc) })
	got := testing.AllocsPerRun(100, func() { _, _ = strict.EncodeJSON(buf[:0], doc) })
	if got > base {
		t.Fatalf("strict encoding allocates %v times per run, lenient %v", got, base)
	}
}
