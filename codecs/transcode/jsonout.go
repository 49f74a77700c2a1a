package transcode

import (
	"unicode/utf8"
)

// safe marks the bytes a JSON string may hold unescaped: ASCII other than controls, the
// quote and the backslash. Bytes from 0x80 are checked as UTF-8.
var safe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendJSONString appends s as a JSON string, escaping as protojson does; it reports
// false if s is not valid UTF-8.
func appendJSONString(out, s []byte) ([]byte, bool) {
	out = append(out, '"')
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && safe[s[j]] {
			j++
		}
		out = append(out, s[i:j]...)
		if j == len(s) {
			break
		}
		c := s[j]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(s[j:])
			if r == utf8.RuneError && n == 1 {
				return out, false
			}
			out = append(out, s[j:j+n]...)
			i = j + n
			continue
		}
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\b':
			out = append(out, '\\', 'b')
		case '\f':
			out = append(out, '\\', 'f')
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i = j + 1
	}
	return append(out, '"'), true
}

// appendString appends s as a JSON string; s is known to be valid UTF-8.
func appendString(out []byte, s string) []byte {
	out, _ = appendJSONString(out, []byte(s))
	return out
}

// appendName returns `"name":`.
func appendName(out []byte, name string) []byte {
	return append(appendString(out, name), ':')
}
