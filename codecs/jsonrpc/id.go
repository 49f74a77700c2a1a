package jsonrpc

import (
	"strconv"
	"unicode/utf8"
)

// ID is a JSON-RPC request id exactly as the client wrote it: the raw JSON text of a string,
// a number or null. The zero ID means "no id" (a notification); NullID is an explicit null.
type ID struct {
	raw string
}

// NullID is the explicit null id, used in responses when a request's id could not be read.
var NullID = ID{raw: jsonNull}

const jsonNull = "null"

// RawID returns the ID for raw, which must be the JSON text of a string, number or null.
func RawID(raw []byte) ID { return ID{raw: string(raw)} }

// StringID returns the ID for the string s.
func StringID(s string) ID { return ID{raw: strconv.Quote(s)} }

// NumberID returns the ID for the integer n.
func NumberID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// IsZero reports whether the id is absent.
func (id ID) IsZero() bool { return id.raw == "" }

// IsNull reports whether the id is an explicit null.
func (id ID) IsNull() bool { return id.raw == jsonNull }

// Raw returns the id's JSON text; "null" for the zero ID, so it can be written into an
// error response as is.
func (id ID) Raw() string {
	if id.raw == "" {
		return jsonNull
	}
	return id.raw
}

// String returns the id for logs.
func (id ID) String() string { return id.Raw() }

// Key returns a comparison key under which two ids that denote the same value are equal:
// "1" and "1.0" and "1e0", or "\"a\"" and "\"\\u0061\"". It is used to match depends_on
// references and responses to requests. Numbers are compared exactly, not as float64, so
// 9007199254740993 and 9007199254740992 stay apart; a string never equals a number.
func (id ID) Key() string {
	switch {
	case id.raw == "" || id.raw == jsonNull:
		return id.raw
	case id.raw[0] == '"':
		s, ok := unquote(id.raw)
		if !ok {
			return "s:" + id.raw
		}
		return "s:" + s
	default:
		if k, ok := numberKey(id.raw); ok {
			return "n:" + k
		}
		return "n:" + id.raw
	}
}

// unquote decodes a JSON string literal, replacing invalid UTF-8 and lone surrogates with
// U+FFFD as encoding/json does.
func unquote(lit string) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", false
	}
	s := lit[1 : len(lit)-1]
	simple := true
	for i := range len(s) {
		if c := s[i]; c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			simple = false
			break
		}
	}
	if simple {
		return s, true
	}
	b, ok := appendUnquoted(make([]byte, 0, len(s)), s)
	return string(b), ok
}
