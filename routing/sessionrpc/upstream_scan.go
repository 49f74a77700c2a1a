package sessionrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// errNotEnvelope is scanEnvelope's failure.
var errNotEnvelope = errors.New("not a session RPC envelope")

// scanEnvelope reads the members of an envelope without reflection: the id and type
// strings and the raw payload (nil when absent). It agrees with encoding/json decoding
// into sessionrpc.Envelope (keys matched case-insensitively, the last of duplicates wins,
// a null id or type changes nothing, a null payload is "null"), except that a top-level null is
// refused: data must be a JSON object whose id and type are strings or null.
func scanEnvelope(data []byte) (id, typ string, payload []byte, err error) {
	if !json.Valid(data) {
		return "", "", nil, errNotEnvelope
	}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return "", "", nil, errNotEnvelope
	}
	i++
	for {
		i = skipSpace(data, i)
		if data[i] == '}' {
			return id, typ, payload, nil
		}
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		kEnd := skipValue(data, i)
		key := data[i:kEnd]
		i = skipSpace(data, kEnd)
		i = skipSpace(data, i+1) // the colon
		vEnd := skipValue(data, i)
		value := data[i:vEnd]
		i = vEnd
		switch {
		case keyIs(key, "id"):
			if id, err = scanString(value, id); err != nil {
				return "", "", nil, err
			}
		case keyIs(key, "type"):
			if typ, err = scanString(value, typ); err != nil {
				return "", "", nil, err
			}
		case keyIs(key, "payload"):
			payload = value
		}
	}
}

// keyIs reports whether the quoted key names member name as encoding/json would match it.
func keyIs(quoted []byte, name string) bool {
	raw := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return bytes.EqualFold(raw, []byte(name))
	}
	var k string
	if json.Unmarshal(quoted, &k) != nil {
		return false
	}
	return strings.EqualFold(k, name)
}

// scanString returns a JSON string value (prev for null, which leaves a member as it
// was); any other value is refused.
func scanString(value []byte, prev string) (string, error) {
	switch value[0] {
	case 'n':
		return prev, nil
	case '"':
	default:
		return "", errNotEnvelope
	}
	raw := value[1 : len(value)-1]
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw), nil
	}
	var s string
	if err := json.Unmarshal(value, &s); err != nil {
		return "", errNotEnvelope
	}
	return s, nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the end of the (valid) JSON value starting at i.
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i = skipString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(data) {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i
			}
			i++
		}
		return i
	}
}

// skipString returns the end of the string starting at i (its opening quote).
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}
