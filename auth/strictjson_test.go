package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"
)

func TestDecodeObject(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error // nil: decodes
	}{
		{"object", `{"a":1,"b":[true,null,"x",{"c":1.5}]}`, nil},
		{"whitespace around", " \n{\"a\":1} \t", nil},
		{"empty object", `{}`, nil},
		{"same name in sibling objects", `{"a":{"x":1},"b":{"x":2}}`, nil},
		{"duplicate", `{"a":1,"a":2}`, errDuplicateName},
		{"duplicate by escape", `{"a":1,"\u0061":2}`, errDuplicateName},
		{"nested duplicate", `{"a":[{"x":1,"x":1}]}`, errDuplicateName},
		{"array", `[1]`, errNotObject},
		{"string", `"x"`, errNotObject},
		{"empty", ``, errSyntax},
		{"trailing object", `{"a":1}{"a":2}`, errSyntax},
		{"trailing garbage", `{"a":1} x`, errSyntax},
		{"unterminated", `{"a":1`, errSyntax},
		{"single quotes", `{'a':1}`, errSyntax},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", errInvalidUTF8},
		{"too deep", `{"a":` + strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth) + `}`, errTooDeep},
		{"deep enough", `{"a":` + strings.Repeat("[", maxJSONDepth-1) + strings.Repeat("]", maxJSONDepth-1) + `}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeObject([]byte(tt.in))
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestCaseVariant(t *testing.T) {
	guarded := []string{"exp", "sub"}
	tests := []struct {
		names []string
		want  bool
	}{
		{[]string{"exp", "sub", "foo"}, false},
		{[]string{"Exp"}, true},
		{[]string{"SUB"}, true},
		{[]string{"ſub"}, true}, // long s folds to s
		{[]string{"foo", "Foo"}, true},
		{[]string{"foo", "FOO", "bar"}, true},
		{[]string{"K", "\u212a"}, true}, // Kelvin sign folds to K
		{[]string{"expiry", "subject"}, false},
	}
	for _, tt := range tests {
		obj := map[string]any{}
		for _, n := range tt.names {
			obj[n] = 1
		}
		if got := caseVariant(obj, newFoldSet(guarded)); got != tt.want {
			t.Errorf("caseVariant(%q) = %v, want %v", tt.names, got, tt.want)
		}
	}
}

// referenceDecode is a straightforward strict decoder on encoding/json's tokenizer, slow but
// plainly right: the oracle decodeObject is fuzzed against.
func referenceDecode(data []byte) (map[string]any, error) {
	if !utf8.Valid(data) {
		return nil, errInvalidUTF8
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, errSyntax
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errNotObject
	}
	obj, err := referenceObject(dec, 1)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errSyntax
	}
	return obj, nil
}

func referenceObject(dec *json.Decoder, depth int) (map[string]any, error) {
	obj := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errSyntax
		}
		name, _ := tok.(string)
		if _, dup := obj[name]; dup {
			return nil, errDuplicateName
		}
		if obj[name], err = referenceValue(dec, depth); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, errSyntax
	}
	return obj, nil
}

func referenceValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, errSyntax
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	if depth >= maxJSONDepth {
		return nil, errTooDeep
	}
	if d == '{' {
		return referenceObject(dec, depth+1)
	}
	arr := []any{}
	for dec.More() {
		v, err := referenceValue(dec, depth+1)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, errSyntax
	}
	return arr, nil
}

// FuzzDecodeObject: decodeObject accepts exactly what the reference decoder accepts, with
// the same value, and refuses the rest for the same reason. (Where the input is both invalid
// and too deep or duplicated, the two may notice different problems first: any refusal then
// agrees.)
func FuzzDecodeObject(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, c := range fuzzseed.Calls(f, fuzzseed.Requests...) {
		if c.Params != nil {
			f.Add(c.Params)
		}
	}
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"a":1,"a":2}`, `{"a":{"b":[1,2,{"c":null}]}}`, `{"\u0061":"\ud800","a":1}`, `[]`, `{"a":1e400}`,
		"{\"a\":\"\xff\"}", `{"a":1} `, `{"a":-0.0,"b":1E+2}`, `{"a":[{"x":1},{"x":1}],"b":{"x":{"x":1}}}`,
		`{"a":"\"","a\\":1,"a\"":2}`, `{"1":1,"2":2,"3":3,"4":4,"5":5,"6":6,"7":7,"8":8,"9":9,"1":0}`,
		`null`, `{"a":1}x`, `{"a":` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeObject(data)
		want, wantErr := referenceDecode(data)
		switch {
		case (err == nil) != (wantErr == nil):
			t.Fatalf("%q: got %v, the reference %v", data, err, wantErr)
		case err == nil && !reflect.DeepEqual(got, want):
			t.Fatalf("%q: decoded %#v, the reference %#v", data, got, want)
		case err != nil && !errors.Is(err, wantErr) && !errors.Is(err, errSyntax) && !errors.Is(wantErr, errSyntax):
			t.Fatalf("%q: refused with %v, the reference with %v", data, err, wantErr)
		}
	})
}
