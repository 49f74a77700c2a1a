package jsonrpc

import "unicode/utf8"

// This file holds the lexical layer of the decoder: whitespace, string, number and literal
// tokens, checked against RFC 8259, plus skipDeep, the syntax-only walk used once the depth
// limit has been exceeded.

// plain marks the bytes a string may hold without a closer look: printable ASCII other
// than the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool { return c-'0' <= 9 }

// peek returns the byte at d.pos, or 0 at the end of the body.
func (d *decoder) peek() byte {
	if d.pos < len(d.buf) {
		return d.buf[d.pos]
	}
	return 0
}

// ws skips insignificant whitespace.
func (d *decoder) ws() {
	for d.pos < len(d.buf) {
		switch d.buf[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// consume skips whitespace and then the byte c, reporting whether c was there.
func (d *decoder) consume(c byte) bool {
	d.ws()
	if d.peek() != c {
		return false
	}
	d.pos++
	return true
}

// str scans the string literal at d.pos (its opening quote) and returns the span of its
// raw contents and whether they hold an escape. It enforces MaxStringBytes.
func (d *decoder) str() (start, end int, esc, ok bool) {
	buf := d.buf
	start = d.pos + 1
	for i := start; ; {
		for i < len(buf) && plain[buf[i]] {
			i++
		}
		if i >= len(buf) {
			return start, i, esc, false
		}
		switch c := buf[i]; {
		case c == '"':
			d.pos = i + 1
			if i-start > d.maxStr {
				d.exceed(LimitMaxStringBytes, d.maxStr)
			}
			return start, i, esc, true
		case c == '\\':
			n := escapeLen(buf[i:])
			if n == 0 {
				return start, i, esc, false
			}
			esc = true
			i += n
		case c < 0x20:
			return start, i, esc, false
		default:
			r, n := utf8.DecodeRune(buf[i:])
			if r == utf8.RuneError && n == 1 {
				return start, i, esc, false
			}
			i += n
		}
	}
}

// escapeLen returns the length of the escape sequence b starts with, 0 if it is malformed.
func escapeLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	if b[1] != 'u' {
		if _, ok := simpleEscape(b[1]); ok {
			return 2
		}
		return 0
	}
	if _, ok := hex4(b, 2); ok {
		return 6
	}
	return 0
}

// number scans the number at d.pos; integer reports that it has neither a fraction nor an
// exponent.
func (d *decoder) number() (integer, ok bool) {
	buf, i := d.buf, d.pos
	if i < len(buf) && buf[i] == '-' {
		i++
	}
	switch {
	case i < len(buf) && buf[i] == '0':
		i++
	case i < len(buf) && isDigit(buf[i]):
		i = digits(buf, i)
	default:
		return false, false
	}
	integer = true
	if i < len(buf) && buf[i] == '.' {
		if i++; i >= len(buf) || !isDigit(buf[i]) {
			return false, false
		}
		i, integer = digits(buf, i), false
	}
	if i < len(buf) && (buf[i] == 'e' || buf[i] == 'E') {
		if i++; i < len(buf) && (buf[i] == '+' || buf[i] == '-') {
			i++
		}
		if i >= len(buf) || !isDigit(buf[i]) {
			return false, false
		}
		i, integer = digits(buf, i), false
	}
	d.pos = i
	return integer, true
}

// digits returns the index after the run of digits starting at buf[i].
func digits(buf []byte, i int) int {
	for i < len(buf) && isDigit(buf[i]) {
		i++
	}
	return i
}

// literal scans the literal word (true, false or null) at d.pos.
func (d *decoder) literal(word string) bool {
	if len(d.buf)-d.pos < len(word) || string(d.buf[d.pos:d.pos+len(word)]) != word {
		return false
	}
	d.pos += len(word)
	return true
}

// scalar scans the string, number or literal at d.pos.
func (d *decoder) scalar() bool {
	switch d.peek() {
	case '"':
		_, _, _, ok := d.str()
		return ok
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	_, ok := d.number()
	return ok
}

// tooDeep records that the container at d.pos exceeds MaxDepth and checks the syntax of
// the rest of it, so that a syntax error further on still makes the body a parse error.
func (d *decoder) tooDeep() bool {
	d.exceed(LimitMaxDepth, d.maxDepth)
	return d.skipDeep()
}

// skipDeep checks the syntax of the value at d.pos without recursion, keeping the open
// containers on d.stack; it makes no semantic checks.
func (d *decoder) skipDeep() bool {
	stack := d.stack[:0]
	defer func() { d.stack = stack[:0] }()
	for {
		// A value is expected at d.pos.
		d.ws()
		switch c := d.peek(); c {
		case '{', '[':
			d.pos++
			d.ws()
			if d.peek() != c+2 { // '}' is '{'+2, ']' is '['+2
				stack = append(stack, c)
				if c == '{' && !d.key() {
					return false
				}
				continue
			}
			d.pos++
		default:
			if !d.scalar() {
				return false
			}
		}
		// A value ended: close containers until one goes on with a comma.
		for {
			if len(stack) == 0 {
				return true
			}
			d.ws()
			top, c := stack[len(stack)-1], d.peek()
			if c == ',' {
				d.pos++
				if top == '{' && !d.key() {
					return false
				}
				break
			}
			if c != top+2 {
				return false
			}
			d.pos++
			stack = stack[:len(stack)-1]
		}
	}
}

// key scans a member name and the colon after it.
func (d *decoder) key() bool {
	d.ws()
	if d.peek() != '"' {
		return false
	}
	_, _, _, ok := d.str()
	return ok && d.consume(':')
}
