package mcpface

import (
	"bytes"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
)

// toolCall is a tools/call request the face serves without mcp-go's server (fastcall.go):
// one request whose every part reads back exactly as mcp-go would re-encode it.
type toolCall struct {
	id   string // the id's JSON text: a plain string or a safe integer
	name string // params.name
	args []byte // params.arguments, an object; nil when absent or null
	meta []byte // params._meta, an object; nil when absent
}

// decodeToolCall reads body as a tools/call the fast path can serve. The envelope is
// decoded by the gateway's strict codec (jsonrpc.Decode: the JSON grammar, no repeated
// member name anywhere, the depth and string limits); ok is false for anything else — a
// batch, another method, a notification, a reserved member in params, an id mcp-go would
// write back differently (a fraction, an exponent, an escape, beyond 2^53), a params member
// other than name, arguments and _meta or one spelled with an escape, a name with an
// escape, arguments that are not an object, a _meta naming a protocol revision — and the
// request is left to mcp-go's server, which answers it as before.
func decodeToolCall(body []byte, lim jsonrpc.Limits) (toolCall, bool) {
	var c toolCall
	// Reserved params members are removed by the codec; the fast path does not see them.
	if bytes.Contains(body, []byte("depends_on")) || bytes.Contains(body, []byte("deadline_ms")) {
		return c, false
	}
	p, derr := jsonrpc.Decode(body, lim)
	if derr != nil || p.Batch || len(p.Members) != 1 || p.Members[0].Err != nil {
		return c, false
	}
	req := p.Members[0].Request
	if req.Method != "tools/call" || req.IsNotification() || len(req.Params) == 0 || req.Params[0] != '{' {
		return c, false
	}
	c.id = req.ID.Raw()
	if !plainID(c.id) {
		return c, false
	}
	ok := true
	var haveName bool
	eachMember(req.Params, func(key, val []byte) bool {
		switch string(key) {
		case `"name"`:
			if !plainString(val) {
				ok = false
				break
			}
			c.name, haveName = string(val[1:len(val)-1]), true
		case `"arguments"`:
			switch val[0] {
			case '{':
				c.args = val
			case 'n': // null: none
			default:
				ok = false
			}
		case `"_meta"`:
			if val[0] != '{' || bytes.Contains(val, []byte("io.modelcontextprotocol/")) {
				ok = false
			}
			c.meta = val
		default:
			ok = false
		}
		return ok
	})
	return c, ok && haveName
}

// plainID reports whether id (JSON text) is one mcp-go re-encodes byte for byte: a string
// of printable ASCII that encoding/json escapes nothing of, or an integer of at most 15
// digits without sign trouble or leading zeros (exact as the float64 mcp-go decodes it to).
func plainID(id string) bool {
	if id == "" {
		return false
	}
	if id[0] == '"' {
		return plainString([]byte(id))
	}
	digits := id
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if digits == "" || len(digits) > 15 || (digits[0] == '0' && (len(digits) > 1 || id[0] == '-')) {
		return false
	}
	for i := range len(digits) {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// plainString reports whether s is a JSON string literal of printable ASCII without
// escapes or characters encoding/json would escape (", \, <, >, &).
func plainString(s []byte) bool {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return false
	}
	for _, c := range s[1 : len(s)-1] {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// eachMember calls fn with the raw name (quotes included) and raw value of every member of
// obj, a JSON object that is known to be well formed, until fn returns false.
func eachMember(obj []byte, fn func(key, val []byte) bool) {
	i := skipSpace(obj, 1)
	if i >= len(obj) || obj[i] == '}' {
		return
	}
	for i < len(obj) {
		ks := i
		i = skipValue(obj, i)
		key := obj[ks:i]
		i = skipSpace(obj, i)
		i = skipSpace(obj, i+1) // the colon
		vs := i
		i = skipValue(obj, i)
		if !fn(key, obj[vs:i]) {
			return
		}
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return
		}
		i = skipSpace(obj, i+1) // the comma
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the well-formed JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		for i++; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return i
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipValue(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default: // a number, true, false or null
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
			i++
		}
		return i
	}
}
