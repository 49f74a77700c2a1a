package msgpack_test

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/msgpack"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// mp decodes a hex string written with optional spaces.
func mp(t testing.TB, h string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(h, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var toJSONCases = []struct {
	name, in, want string
}{
	{"nil", "c0", `null`},
	{"false", "c2", `false`},
	{"true", "c3", `true`},
	{"positive fixint", "7f", `127`},
	{"negative fixint", "e0", `-32`},
	{"negative fixint -1", "ff", `-1`},
	{"uint8", "cc ff", `255`},
	{"uint16", "cd ffff", `65535`},
	{"uint32", "ce ffffffff", `4294967295`},
	{"uint64 max", "cf ffffffffffffffff", `18446744073709551615`},
	{"int8", "d0 80", `-128`},
	{"int16", "d1 8000", `-32768`},
	{"int32", "d2 80000000", `-2147483648`},
	{"int64 min", "d3 8000000000000000", `-9223372036854775808`},
	{"int8 positive", "d0 05", `5`},
	{"float64 integral", "cb 3ff0000000000000", `1.0`},
	{"float64 fraction", "cb 3fb999999999999a", `0.1`},
	{"float64 negative zero", "cb 8000000000000000", `-0.0`},
	{"float64 large", "cb 444b1ae4d6e2ef50", `1e+21`},
	{"float64 small", "cb 3e7ad7f29abcaf48", `1e-07`},
	{"float64 max", "cb 7fefffffffffffff", `1.7976931348623157e+308`},
	{"float32 shortest", "ca 3dcccccd", `0.1`},
	{"float32 integral", "ca 4b800000", `16777216.0`},
	{"fixstr", "a3 616263", `"abc"`},
	{"empty str", "a0", `""`},
	{"str8", "d9 03 616263", `"abc"`},
	{"str16", "da 0003 616263", `"abc"`},
	{"str32", "db 00000003 616263", `"abc"`},
	{"str needs escapes", "a5 22 5c 0a 01 41", `"\"\\\n\u0001A"`},
	{"str line separator", "a3 e280a8", `"\u2028"`},
	{"str raw unicode and html", "a9 3c26c3a9f09f9880 3e", `"<&é😀>"`},
	{"bin8", "c4 03 010203", `"AQID"`},
	{"bin16 empty", "c5 0000", `""`},
	{"bin32", "c6 00000001 ff", `"/w=="`},
	{"fixarray", "93 01 a1 61 c0", `[1,"a",null]`},
	{"empty array", "90", `[]`},
	{"array16", "dc 0002 c3 c2", `[true,false]`},
	{"array32", "dd 00000001 90", `[[]]`},
	{"fixmap ordered", "82 a1 62 01 a1 61 02", `{"b":1,"a":2}`},
	{"empty map", "80", `{}`},
	{"map16 str8 key", "de 0001 d9 01 6b 93 01 02 03", `{"k":[1,2,3]}`},
	{"map32", "df 00000001 a1 6b 80", `{"k":{}}`},
	{"duplicate keys kept", "82 a1 61 01 a1 61 02", `{"a":1,"a":2}`},
	{"timestamp32", "d6 ff 6968c1b8", `"2026-01-15T10:30:16Z"`},
	{"timestamp64", "d7 ff 77359400 6968c1b8", `"2026-01-15T10:30:16.5Z"`},
	{"timestamp96 before 1970", "c7 0c ff 00000001 ffffffffffffffff", `"1969-12-31T23:59:59.000000001Z"`},
	{"json-rpc request", "84 a7 6a736f6e727063 a3 322e30 a6 6d6574686f64 ac 6e656b74652e696e766f6b65 a6 706172616d73 82 a3 636170 a9 73656e74696d656e74 a2 696e 81 a4 74657874 a2 6869 a2 6964 01",
		`{"jsonrpc":"2.0","method":"nekte.invoke","params":{"cap":"sentiment","in":{"text":"hi"}},"id":1}`},
}

func TestToJSON(t *testing.T) {
	for _, tt := range toJSONCases {
		if tt.want == "" {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			got, err := msgpack.ToJSON(mp(t, tt.in), msgpack.Limits{})
			if err != nil || string(got) != tt.want {
				t.Errorf("ToJSON(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestToJSONErrors(t *testing.T) {
	deep := strings.Repeat("91", 65) + "c0"
	tests := []struct {
		name, in string
		lim      msgpack.Limits
		offset   int
		limit    string
	}{
		{"empty", "", msgpack.Limits{}, 0, ""},
		{"never used", "c1", msgpack.Limits{}, 0, ""},
		{"trailing bytes", "c0 c0", msgpack.Limits{}, 1, ""},
		{"short uint16", "cd ff", msgpack.Limits{}, 1, ""},
		{"short float64", "cb 3ff0", msgpack.Limits{}, 1, ""},
		{"short str", "a3 6162", msgpack.Limits{}, 1, ""},
		{"huge declared str", "db ffffffff 61", msgpack.Limits{MaxStringBytes: 1 << 40}, 5, ""},
		{"huge declared array", "dd ffffffff c0", msgpack.Limits{}, 5, ""},
		{"huge declared map", "df 00000002 a1 61 c0", msgpack.Limits{}, 5, ""},
		{"missing array item", "92 c0", msgpack.Limits{}, 1, ""},
		{"integer key", "81 01 02", msgpack.Limits{}, 1, ""},
		{"nil key", "81 c0 02", msgpack.Limits{}, 1, ""},
		{"bin key", "81 c4 01 61 02", msgpack.Limits{}, 1, ""},
		{"invalid UTF-8", "a2 c328", msgpack.Limits{}, 1, ""},
		{"invalid UTF-8 key", "81 a1 ff 01", msgpack.Limits{}, 2, ""},
		{"NaN", "cb 7ff8000000000001", msgpack.Limits{}, 0, ""},
		{"infinity", "ca 7f800000", msgpack.Limits{}, 0, ""},
		{"unknown extension", "d4 01 00", msgpack.Limits{}, 1, ""},
		{"bad timestamp length", "d5 ff 0000", msgpack.Limits{}, 1, ""},
		{"timestamp nanoseconds too large", "d7 ff ffffffff 00000000", msgpack.Limits{}, 1, ""},
		{"timestamp past year 9999", "c7 0c ff 00000000 0000ffffffffffff", msgpack.Limits{}, 2, ""},
		{"depth limit", deep, msgpack.Limits{}, 64, msgpack.LimitDepth},
		{"depth limit lowered", "91 91 c0", msgpack.Limits{MaxDepth: 1}, 1, msgpack.LimitDepth},
		{"string limit", "a3 616263", msgpack.Limits{MaxStringBytes: 2}, 1, msgpack.LimitStringBytes},
		{"bin limit", "c4 03 010203", msgpack.Limits{MaxStringBytes: 2}, 2, msgpack.LimitStringBytes},
		{"key limit", "81 a3 616263 c0", msgpack.Limits{MaxStringBytes: 2}, 2, msgpack.LimitStringBytes},
		{"size limit", "a3 616263", msgpack.Limits{MaxBytes: 3}, 0, msgpack.LimitBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := msgpack.ToJSON(mp(t, tt.in), tt.lim)
			e, ok := errors.AsType[*msgpack.Error](err)
			if !ok || out != nil {
				t.Fatalf("ToJSON(%s) = %s, %v; want an *Error", tt.in, out, err)
			}
			if e.Offset != tt.offset || e.Limit != tt.limit || e.Reason == "" {
				t.Errorf("error %+v, want offset %d limit %q", e, tt.offset, tt.limit)
			}
			wantCode := schemas.CodeParseError
			if tt.limit != "" {
				wantCode = schemas.CodeInvalidRequest
			}
			if e.Code() != wantCode {
				t.Errorf("code %d, want %d", e.Code(), wantCode)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	e := &msgpack.Error{Offset: 3, Reason: "map key is not a string"}
	if got := e.Error(); got != "msgpack: offset 3: map key is not a string" {
		t.Errorf("got %q", got)
	}
}
