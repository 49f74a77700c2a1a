package sessionrpc

import (
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// Reading members of a JSON document in place, without decoding it: what the targets of
// session routes use to pick members out of messages they relay or map. The document must
// be valid JSON (the caller checked it, or it came from a transcoder); a malformed one only
// makes members absent.

// Member returns the raw value of the member k of the JSON object obj (the last one when
// k appears twice, as encoding/json decodes it); ok false when absent or obj is not an
// object.
func Member(obj []byte, k string) (v []byte, ok bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return v, ok // '}' or malformed
		}
		kend := skipString(obj, i)
		if kend < 0 {
			return nil, false
		}
		key := obj[i+1 : kend-1]
		i = skipSpace(obj, kend)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		i = skipSpace(obj, i+1)
		vend := skipValue(obj, i)
		if vend < 0 {
			return nil, false
		}
		if keyIs(key, k) {
			v, ok = obj[i:vend], true
		}
		i = skipSpace(obj, vend)
		if i >= len(obj) || obj[i] != ',' {
			return v, ok
		}
		i++
	}
}

// keyIs reports whether the raw (still escaped) key is k; matching is case-sensitive.
func keyIs(key []byte, k string) bool {
	if slices.Contains(key, '\\') {
		var s string
		return json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &s) == nil && s == k
	}
	return string(key) == k
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] ('"'), -1 when it does
// not end.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the value starting at b[i], -1 when it does not end.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				if j = skipString(b, j); j < 0 {
					return -1
				}
				j--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// AppendEscaped appends s escaped for the inside of a JSON string, as encoding/json
// escapes it (control characters, quote, backslash, <, >, &, U+2028, U+2029; invalid
// UTF-8 as U+FFFD).
func AppendEscaped(buf []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf = append(buf, '\\', c)
			case c == '\n':
				buf = append(buf, '\\', 'n')
			case c == '\r':
				buf = append(buf, '\\', 'r')
			case c == '\t':
				buf = append(buf, '\\', 't')
			case c == '\b':
				buf = append(buf, '\\', 'b')
			case c == '\f':
				buf = append(buf, '\\', 'f')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				buf = append(buf, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			buf = append(buf, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			buf = append(buf, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return buf
}
