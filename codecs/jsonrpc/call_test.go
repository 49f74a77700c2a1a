package jsonrpc

import (
	"reflect"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"
)

// enveloped is what DecodeCall must equal: the request written in an envelope and decoded.
func enveloped(method string, params []byte, input bool, lim Limits) (Request, *DecodeError) {
	return decodeEnveloped(method, params, input, lim)
}

// sameCall fails t unless DecodeCall and the envelope agree on method, params and input.
func sameCall(t *testing.T, method string, params []byte, input bool, lim Limits) {
	t.Helper()
	got, gerr := DecodeCall(method, params, input, lim)
	want, werr := enveloped(method, params, input, lim)
	if (gerr == nil) != (werr == nil) || (gerr != nil && *gerr != *werr) {
		t.Fatalf("DecodeCall(%q, %q, %v) error %+v, the envelope's %+v", method, params, input, gerr, werr)
	}
	if gerr != nil {
		return
	}
	if got.Method != want.Method || got.ID != want.ID || got.DeadlineMs != want.DeadlineMs ||
		string(got.Params) != string(want.Params) || !reflect.DeepEqual(got.DependsOn, want.DependsOn) {
		t.Fatalf("DecodeCall(%q, %q, %v) = %+v, the envelope's %+v", method, params, input, got, want)
	}
}

func TestDecodeCallAgreesWithTheEnvelope(t *testing.T) {
	small := Limits{MaxDepth: 3, MaxStringBytes: 8}
	tests := []struct {
		name   string
		method string
		params string
		input  bool
		lim    Limits
	}{
		{"object", "calc.subtract", `{"a":1,"b":2}`, false, Limits{}},
		{"array", "sum", `[1,2,3]`, false, Limits{}},
		{"none", "get_data", ``, false, Limits{}},
		{"whitespace around", "sum", " \n[1] \t", false, Limits{}},
		{"reserved members", "calc.subtract", `{"a":1,"deadline_ms":5,"depends_on":["x"]}`, false, Limits{}},
		{"bad deadline", "m", `{"deadline_ms":-1}`, false, Limits{}},
		{"duplicate names", "m", `{"a":1,"a":2}`, false, Limits{}},
		{"scalar params", "m", `5`, false, Limits{}},
		{"only whitespace", "m", `   `, false, Limits{}},
		{"syntax", "m", `{"a":}`, false, Limits{}},
		{"trailing", "m", `{} {}`, false, Limits{}},
		{"too deep", "m", `{"a":{"b":{"c":1}}}`, false, small},
		{"string too long", "m", `{"a":"123456789"}`, false, small},
		{"method too long", "123456789", `[]`, false, small},
		{"empty method", "", `[]`, false, Limits{}},
		{"escaped method", "a\"b\n", `[]`, false, Limits{}},
		{"invalid UTF-8 method", "a\xffb", `[]`, false, Limits{}},
		{"line separator method", "a\u2028b", `[]`, false, Limits{}},
		{"input object", "m", `{"a":1,"deadline_ms":5}`, true, Limits{}},
		{"input scalar", "m", `"text"`, true, Limits{}},
		{"input two values", "m", `1,2`, true, Limits{}},
		{"input too deep", "m", `{"a":[1]}`, true, small},
		{"input at depth one", "m", `1`, true, Limits{MaxDepth: 1}},
		{"input none", "m", ``, true, Limits{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "input two values" {
				// The envelope reads `[1,2]` as two elements; DecodeCall refuses the input
				// as what it is, not one JSON value. Only this case may differ.
				if _, err := DecodeCall(tt.method, []byte(tt.params), true, tt.lim); err == nil {
					t.Fatal("two values accepted as one input")
				}
				return
			}
			sameCall(t, tt.method, []byte(tt.params), tt.input, tt.lim)
		})
	}
}

// TestDecodeCallRefusesSmuggledMembers: params are one JSON value; bytes that would add
// members to a written envelope (a second method, an id) are invalid JSON, where the old
// envelope read them as members (and refused them only for their duplicates).
func TestDecodeCallRefusesSmuggledMembers(t *testing.T) {
	for _, params := range []string{`{},"id":2`, `[],"method":"admin.keys"`, `0,"0":0`, `1,2`} {
		for _, input := range []bool{false, true} {
			if _, err := DecodeCall("m", []byte(params), input, Limits{}); err == nil || err.Code != -32700 {
				t.Errorf("DecodeCall(m, %s, %v) = %v, want a parse error", params, input, err)
			}
		}
	}
}

// FuzzDecodeCall: DecodeCall reads every method and params as the envelope does.
func FuzzDecodeCall(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for i, c := range fuzzseed.Calls(f, fuzzseed.Requests...) {
		if c.Params != nil {
			f.Add(c.Method, c.Params, i%2 == 0)
		}
	}
	f.Add("calc.subtract", []byte(`{"a":1,"deadline_ms":5}`), false)
	f.Add("m", []byte(`[1,{"x":[true,null]}]`), false)
	f.Add("m", []byte(`{"a":"\u00e9"}`), true)
	f.Add("a\"b", []byte(`{}`), false)
	f.Fuzz(func(t *testing.T, method string, params []byte, input bool) {
		if !validSingle(params) {
			// Bytes that are not one JSON value (`1,2`, `{},"id":2`) would be read by the
			// envelope as more elements or more envelope members; DecodeCall refuses them
			// as invalid JSON, which TestDecodeCallRefusesSmuggledMembers checks.
			return
		}
		sameCall(t, method, params, input, Limits{MaxDepth: 8, MaxStringBytes: 64})
	})
}

// validSingle reports whether b holds at most one JSON value as far as DecodeCall's input
// check can tell: the cases where the envelope's array could split it are skipped.
func validSingle(b []byte) bool {
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	d.reset(b, Limits{MaxDepth: 64})
	defer d.release()
	d.ws()
	if d.pos == len(d.buf) {
		return true
	}
	ok := d.value(2)
	d.ws()
	return ok && d.pos == len(d.buf)
}
