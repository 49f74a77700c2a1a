package transcode

import (
	"unicode/utf8"
)

// This file is the lexical layer of EncodeJSON. It accepts exactly the token grammar of
// protojson's tokenizer, quirks included: a number, true, false or null must be followed
// by a delimiter (not one of -+._ letters digits), and an exponent may lack digits ("1e"
// followed by a delimiter is a number token, an integer for integer fields).

// plain marks the bytes a string may hold without a closer look: printable ASCII other
// than the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// notDelim marks the bytes that may not follow a number or a literal.
var notDelim = func() (t [256]bool) {
	for _, c := range []byte("-+._") {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	return t
}()

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool { return c-'0' <= 9 }

// scanner walks a JSON document.
type scanner struct {
	in  []byte
	pos int
}

// ws skips insignificant whitespace.
func (s *scanner) ws() {
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the byte at s.pos, or 0 at the end of the input.
func (s *scanner) peek() byte {
	if s.pos < len(s.in) {
		return s.in[s.pos]
	}
	return 0
}

// eat consumes c if it is the byte at s.pos.
func (s *scanner) eat(c byte) bool {
	if s.pos < len(s.in) && s.in[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// next reads what follows an element of a container closed by end: a comma, with the
// whitespace around it (more is true), or end (more is false). Anything else is a syntax
// error.
func (s *scanner) next(end byte) (more bool, err *PathError) {
	s.ws()
	if s.eat(',') {
		s.ws()
		return true, nil
	}
	if s.eat(end) {
		return false, nil
	}
	return false, s.syntax()
}

// lit consumes the literal word at s.pos if a delimiter follows it.
func (s *scanner) lit(word string) bool {
	end := s.pos + len(word)
	if end > len(s.in) || string(s.in[s.pos:end]) != word || end < len(s.in) && notDelim[s.in[end]] {
		return false
	}
	s.pos = end
	return true
}

// str scans the string at s.pos (its opening quote) and returns the span of its raw
// contents and whether they hold an escape.
func (s *scanner) str() (start, end int, esc bool, err *PathError) {
	in := s.in
	start = s.pos + 1
	i := start
	for {
		for i < len(in) && plain[in[i]] {
			i++
		}
		if i >= len(in) {
			return 0, 0, false, fail(reasonEOF)
		}
		switch c := in[i]; {
		case c == '"':
			s.pos = i + 1
			return start, i, esc, nil
		case c == '\\':
			n := escapeLen(in[i:])
			if n == 0 {
				return 0, 0, false, fail("invalid escape in string")
			}
			esc = true
			i += n
		case c < 0x20:
			return 0, 0, false, fail("invalid control character in string")
		default:
			r, n := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && n == 1 {
				return 0, 0, false, fail(reasonUTF8)
			}
			i += n
		}
	}
}

// escapeLen returns the length of the escape sequence b starts with, 0 if it is invalid.
// A UTF-16 surrogate must be the first half of a pair written as two escapes.
func escapeLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
	default:
		return 0
	}
	r, ok := hex4(b, 2)
	if !ok {
		return 0
	}
	if r < 0xD800 || r >= 0xE000 {
		return 6
	}
	if r >= 0xDC00 || len(b) < 12 || b[6] != '\\' || b[7] != 'u' {
		return 0
	}
	if r2, ok := hex4(b, 8); !ok || r2 < 0xDC00 || r2 >= 0xE000 {
		return 0
	}
	return 12
}

// hex4 decodes the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if len(b) < i+4 {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// unescape appends the decoded form of the raw string contents raw, which str has
// checked, to dst.
func unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			j := i + 1
			for j < len(raw) && raw[j] != '\\' {
				j++
			}
			dst = append(dst, raw[i:j]...)
			i = j
			continue
		}
		switch raw[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(raw, i+2)
			if r >= 0xD800 && r < 0xDC00 {
				r2, _ := hex4(raw, i+8)
				r = (r-0xD800)<<10 | (r2 - 0xDC00) + 0x10000
				i += 6
			}
			dst = utf8.AppendRune(dst, r)
			i += 6
			continue
		default: // '"', '\\', '/'
			dst = append(dst, raw[i+1])
		}
		i += 2
	}
	return dst
}

// scanNumber returns the end of the number token at in[i:], as protojson's tokenizer
// delimits it.
func scanNumber(in []byte, i int) (int, bool) {
	if i < len(in) && in[i] == '-' {
		i++
	}
	switch {
	case i >= len(in):
		return 0, false
	case in[i] == '0':
		i++
	case isDigit(in[i]):
		i++
		for i < len(in) && isDigit(in[i]) {
			i++
		}
	default:
		return 0, false
	}
	if i+1 < len(in) && in[i] == '.' && isDigit(in[i+1]) {
		i += 2
		for i < len(in) && isDigit(in[i]) {
			i++
		}
	}
	if i+1 < len(in) && (in[i] == 'e' || in[i] == 'E') {
		i++
		if in[i] == '+' || in[i] == '-' {
			if i++; i >= len(in) {
				return 0, false
			}
		}
		for i < len(in) && isDigit(in[i]) {
			i++
		}
	}
	if i < len(in) && notDelim[in[i]] {
		return 0, false
	}
	return i, true
}

// scalar consumes the string, number or literal at s.pos.
func (s *scanner) scalar() *PathError {
	switch c := s.peek(); {
	case c == '"':
		_, _, _, err := s.str()
		return err
	case c == 't' && s.lit("true"), c == 'f' && s.lit("false"), c == 'n' && s.lit("null"):
		return nil
	case c == '-' || isDigit(c):
		end, ok := scanNumber(s.in, s.pos)
		if ok {
			s.pos = end
			return nil
		}
	}
	return s.syntax()
}

// syntax returns the error for an unexpected byte at s.pos.
func (s *scanner) syntax() *PathError {
	if s.pos >= len(s.in) {
		return fail(reasonEOF)
	}
	return fail("invalid JSON")
}

// got names the kind of the JSON value starting at s.pos, for error reasons.
func (s *scanner) got() string {
	switch c := s.peek(); {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case c == '-' || isDigit(c):
		return "number"
	case s.pos >= len(s.in):
		return "end of input"
	}
	return "invalid JSON"
}

// want returns the error for a value of the wrong kind at s.pos.
func (s *scanner) want(what string) *PathError {
	got := s.got()
	if got == "invalid JSON" || got == "end of input" {
		return s.syntax()
	}
	return fail("want " + what + ", got " + got)
}

// skip consumes the value at s.pos, checking its syntax; containers may nest limit deep.
func (s *scanner) skip(limit int, stack []byte) ([]byte, *PathError) {
	stack = stack[:0]
	for {
		s.ws()
		switch c := s.peek(); c {
		case '{', '[':
			s.pos++
			if len(stack) >= limit {
				return stack, fail(reasonDepth)
			}
			s.ws()
			if !s.eat(c + 2) { // '}' is '{'+2, ']' is '['+2
				stack = append(stack, c)
				if c == '{' {
					if err := s.key(); err != nil {
						return stack, err
					}
				}
				continue
			}
		default:
			if err := s.scalar(); err != nil {
				return stack, err
			}
		}
		// A value ended: close containers until one goes on with a comma.
		for {
			if len(stack) == 0 {
				return stack, nil
			}
			s.ws()
			top := stack[len(stack)-1]
			if s.eat(',') {
				if top == '{' {
					if err := s.key(); err != nil {
						return stack, err
					}
				}
				break
			}
			if !s.eat(top + 2) {
				return stack, s.syntax()
			}
			stack = stack[:len(stack)-1]
		}
	}
}

// key consumes a member name and the colon after it.
func (s *scanner) key() *PathError {
	s.ws()
	if s.peek() != '"' {
		return s.syntax()
	}
	if _, _, _, err := s.str(); err != nil {
		return err
	}
	s.ws()
	if !s.eat(':') {
		return s.syntax()
	}
	return nil
}
