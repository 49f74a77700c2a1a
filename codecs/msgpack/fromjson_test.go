package msgpack_test

import (
	"errors"
	"strings"
	"testing"

	vmsgpack "github.com/vmihailenco/msgpack/v5"

	"github.com/gatehouse-dev/gatehouse/codecs/msgpack"
)

var fromJSONCases = []struct {
	name, in, want string // want in hex
}{
	{"null", `null`, "c0"},
	{"booleans", `[true,false]`, "92 c3 c2"},
	{"fixint", `127`, "7f"},
	{"uint8", `128`, "cc 80"},
	{"uint16", `65535`, "cd ffff"},
	{"uint32", `65536`, "ce 00010000"},
	{"uint64", `18446744073709551615`, "cf ffffffffffffffff"},
	{"negative fixint", `-32`, "e0"},
	{"int8", `-33`, "d0 df"},
	{"int16", `-129`, "d1 ff7f"},
	{"int32", `-32769`, "d2 ffff7fff"},
	{"int64", `-9223372036854775808`, "d3 8000000000000000"},
	{"minus zero is an integer", `-0`, "00"},
	{"fraction is a float", `1.0`, "cb 3ff0000000000000"},
	{"exponent is a float", `1e2`, "cb 4059000000000000"},
	{"beyond uint64 is a float", `18446744073709551616`, "cb 43f0000000000000"},
	{"below int64 is a float", `-9223372036854775809`, "cb c3e0000000000000"},
	{"underflow is zero", `1e-400`, "cb 0000000000000000"},
	{"fixstr", `"abc"`, "a3 616263"},
	{"escapes decoded", `"a\"\\\/\n\u00e9\ud83d\ude00"`, "ab 61 22 5c 2f 0a c3a9 f09f9880"},
	{"lone surrogate", `"\ud800"`, "a3 efbfbd"},
	{"invalid UTF-8", "\"a\xffb\"", "a5 61 efbfbd 62"},
	{"str8", `"` + strings.Repeat("x", 32) + `"`, "d9 20" + strings.Repeat("78", 32)},
	{"str16", `"` + strings.Repeat("x", 256) + `"`, "da 0100" + strings.Repeat("78", 256)},
	{"object order kept", `{ "b" : 1 , "a" : [ ] }`, "82 a1 62 01 a1 61 90"},
	{"duplicate keys kept", `{"a":1,"a":2}`, "82 a1 61 01 a1 61 02"},
	{"nested counts", `[[1,2],{"k":[3]},[]]`, "93 92 01 02 81 a1 6b 91 03 90"},
	{"array16", `[` + strings.Repeat("0,", 15) + `0]`, "dc 0010" + strings.Repeat("00", 16)},
	{"map16", `{` + strings.Repeat(`"":0,`, 15) + `"":0}`, "de 0010" + strings.Repeat("a0 00", 16)},
}

func TestFromJSON(t *testing.T) {
	for _, tt := range fromJSONCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := msgpack.FromJSON([]byte(tt.in))
			want := mp(t, tt.want)
			if err != nil || string(got) != string(want) {
				t.Errorf("FromJSON(%s) = % x, %v; want % x", tt.in, got, err, want)
			}
		})
	}
}

func TestFromJSONErrors(t *testing.T) {
	tests := []struct {
		name, in string
		offset   int
	}{
		{"empty", ``, 0},
		{"broken", `{"a":}`, 5},
		{"two values", `1 2`, 2},
		{"float overflow", `[1, 1e400]`, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := msgpack.FromJSON([]byte(tt.in))
			e, ok := errors.AsType[*msgpack.Error](err)
			if !ok || e.Offset != tt.offset {
				t.Errorf("FromJSON(%s) error %v, want an *Error at %d", tt.in, err, tt.offset)
			}
		})
	}
}

// TestAgainstReferenceCodec checks both directions against an independent MessagePack
// implementation: what FromJSON writes, vmihailenco/msgpack reads as the same values, and
// what vmihailenco/msgpack writes, ToJSON reads.
func TestAgainstReferenceCodec(t *testing.T) {
	doc := `{"jsonrpc":"2.0","id":7,"result":{"out":{"label":"positive","score":0.95,"n":-300,"big":4294967296,"tags":["a","b"],"none":null,"ok":true}}}`
	b, err := msgpack.FromJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := vmsgpack.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	out := got["result"].(map[string]any)["out"].(map[string]any)
	if out["label"] != "positive" || out["score"] != 0.95 || out["n"] != int16(-300) || out["big"] != uint64(4294967296) ||
		out["none"] != nil || out["ok"] != true || got["id"] != int8(7) {
		t.Errorf("reference codec reads %#v", got)
	}

	in := map[string]any{"f32": float32(0.1), "f64": 2.5, "bin": []byte{1, 2, 3}, "neg": int64(-5), "s": "x"}
	enc, err := vmsgpack.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	j, err := msgpack.ToJSON(enc, msgpack.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, member := range []string{`"f32":0.1`, `"f64":2.5`, `"bin":"AQID"`, `"neg":-5`, `"s":"x"`} {
		if !strings.Contains(string(j), member) {
			t.Errorf("ToJSON = %s, missing %s", j, member)
		}
	}
}
