package jsonrpc

import (
	"unicode/utf16"
	"unicode/utf8"
)

// text is the input of the unescaping helpers: a JSON string's contents held either in the
// body (bytes) or in an ID (string).
type text interface{ ~string | ~[]byte }

// appendUnquoted appends the decoded contents of a JSON string literal, given without its
// quotes, to dst. Invalid UTF-8 and lone surrogates become U+FFFD, as encoding/json does.
// ok is false on a malformed escape, a raw control character or a raw quote.
func appendUnquoted(dst []byte, s string) ([]byte, bool) { return unescape(dst, s) }

// unescape is appendUnquoted for either kind of text.
func unescape[S text](dst []byte, s S) ([]byte, bool) {
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\':
			var ok bool
			if dst, i, ok = unescapeOne(dst, s, i); !ok {
				return dst, false
			}
		case c == '"' || c < 0x20:
			return dst, false
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := decodeRune(s[i:])
			dst = utf8.AppendRune(dst, r)
			i += n
		}
	}
	return dst, true
}

// unescapeOne decodes the escape sequence at s[i] (a backslash) and returns the index after it.
func unescapeOne[S text](dst []byte, s S, i int) ([]byte, int, bool) {
	if i+1 >= len(s) {
		return dst, i, false
	}
	if c := s[i+1]; c != 'u' {
		b, ok := simpleEscape(c)
		return append(dst, b), i + 2, ok
	}
	r, ok := hex4(s, i+2)
	if !ok {
		return dst, i, false
	}
	i += 6
	if utf16.IsSurrogate(r) {
		// A high surrogate pairs with a following \uXXXX low surrogate; anything else
		// leaves it lone, and it becomes U+FFFD.
		if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
			if r2, ok := hex4(s, i+2); ok {
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					return utf8.AppendRune(dst, dec), i + 6, true
				}
			}
		}
		r = utf8.RuneError
	}
	return utf8.AppendRune(dst, r), i, true
}

// simpleEscape maps the character after a backslash to the byte it stands for.
func simpleEscape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// hex4 reads the four hex digits at s[i:].
func hex4[S text](s S, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for k := i; k < i+4; k++ {
		v := hexVal[s[k]]
		if v < 0 {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// hexVal maps a byte to its hex digit value, or -1.
var hexVal = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = int8(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = int8(c - 'a' + 10)
		t[c-'a'+'A'] = int8(c - 'a' + 10)
	}
	return t
}()

// decodeRune is utf8.DecodeRune for either kind of text: it returns (RuneError, 1) for a
// byte that does not start a valid, shortest-form, non-surrogate encoding.
func decodeRune[S text](s S) (rune, int) {
	c0 := s[0]
	if c0 < utf8.RuneSelf {
		return rune(c0), 1
	}
	n, lo, hi := seqInfo(c0)
	if n == 0 || len(s) < n || s[1] < lo || s[1] > hi {
		return utf8.RuneError, 1
	}
	r := rune(c0) & (0x7f >> n)
	r = r<<6 | rune(s[1]&0x3f)
	for k := 2; k < n; k++ {
		if s[k]&0xc0 != 0x80 {
			return utf8.RuneError, 1
		}
		r = r<<6 | rune(s[k]&0x3f)
	}
	return r, n
}

// seqInfo returns the length of the UTF-8 sequence led by c0 and the range allowed for its
// second byte (narrowed to rule out overlong forms, surrogates and values above U+10FFFF);
// n is 0 when c0 cannot lead a sequence.
func seqInfo(c0 byte) (n int, lo, hi byte) {
	switch {
	case c0 < 0xc2:
		return 0, 0, 0
	case c0 < 0xe0:
		return 2, 0x80, 0xbf
	case c0 == 0xe0:
		return 3, 0xa0, 0xbf
	case c0 == 0xed:
		return 3, 0x80, 0x9f
	case c0 < 0xf0:
		return 3, 0x80, 0xbf
	case c0 == 0xf0:
		return 4, 0x90, 0xbf
	case c0 < 0xf4:
		return 4, 0x80, 0xbf
	case c0 == 0xf4:
		return 4, 0x80, 0x8f
	}
	return 0, 0, 0
}
