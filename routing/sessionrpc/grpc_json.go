package sessionrpc

import (
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
)

// The mapping reads streamed messages by path without decoding them: member scans a JSON
// object for one member and returns its raw value. Messages come from the gRPC backend's
// transcoder (valid JSON) and chat.start payloads are checked with json.Valid first; a
// malformed document only makes its members absent.

// appendInner appends the text of the JSON value v, escaped for the inside of a JSON
// string: a string's contents as they are (already escaped), any other value's JSON
// escaped.
func appendInner(buf []byte, v []byte) []byte {
	if len(v) >= 2 && v[0] == '"' {
		return append(buf, v[1:len(v)-1]...)
	}
	return sessionrpc.AppendEscaped(buf, string(v))
}

// textOf is the text of a JSON value: a string's contents, any other value's JSON.
func textOf(v []byte) string {
	if len(v) >= 2 && v[0] == '"' {
		inner := v[1 : len(v)-1]
		for _, c := range inner {
			if c == '\\' {
				var s string
				if json.Unmarshal(v, &s) == nil {
					return s
				}
				break
			}
		}
		return string(inner)
	}
	return string(v)
}

// quote returns s as a JSON string.
func quote(s string) []byte { return append(sessionrpc.AppendEscaped([]byte{'"'}, s), '"') }
