package canonical

import (
	"bytes"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// parser reads JSON text into values; it is a plain recursive-descent parser bounded by
// MaxDepth.
type parser struct {
	src []byte
	pos int
}

func (p *parser) fail(reason string) *SyntaxError {
	return &SyntaxError{Offset: p.pos, Reason: reason}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

var literals = [][]byte{[]byte("true"), []byte("false"), []byte("null")}

func (p *parser) value(depth int) (value, error) {
	if depth > MaxDepth {
		return value{}, ErrTooDeep
	}
	p.skipSpace()
	if p.pos >= len(p.src) {
		return value{}, p.fail("unexpected end of input")
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		units, err := p.str()
		return value{kind: 's', units: units}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		for _, lit := range literals {
			if bytes.HasPrefix(p.src[p.pos:], lit) {
				p.pos += len(lit)
				return value{kind: 'l', raw: lit}, nil
			}
		}
		return value{}, p.fail("unexpected character " + strconv.QuoteRune(rune(c)))
	}
}

func (p *parser) object(depth int) (value, error) {
	p.pos++ // '{'
	v := value{kind: 'o'}
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return v, p.fail("expected a member name")
		}
		key, err := p.str()
		if err != nil {
			return v, err
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return v, p.fail("expected ':'")
		}
		p.pos++
		val, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		v.members = setMember(v.members, key, val)
		p.skipSpace()
		if p.pos >= len(p.src) {
			return v, p.fail("unexpected end of input in an object")
		}
		if p.src[p.pos] == '}' {
			p.pos++
			sortMembers(v.members)
			return v, nil
		}
		if p.src[p.pos] != ',' {
			return v, p.fail("expected ',' or '}'")
		}
		p.pos++
	}
}

func (p *parser) array(depth int) (value, error) {
	p.pos++ // '['
	v := value{kind: 'a'}
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		item, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		v.items = append(v.items, item)
		p.skipSpace()
		if p.pos >= len(p.src) {
			return v, p.fail("unexpected end of input in an array")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			return v, nil
		}
		if p.src[p.pos] != ',' {
			return v, p.fail("expected ',' or ']'")
		}
		p.pos++
	}
}

// str reads a string literal into UTF-16 code units, keeping lone surrogates.
func (p *parser) str() ([]uint16, error) {
	p.pos++ // opening quote
	var units []uint16
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return units, nil
		case c == '\\':
			u, err := p.escape()
			if err != nil {
				return nil, err
			}
			units = append(units, u)
		case c < 0x20:
			return nil, p.fail("control character in a string")
		case c < utf8.RuneSelf:
			units = append(units, uint16(c))
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.src[p.pos:])
			p.pos += size
			units = utf16.AppendRune(units, r) // an invalid byte decodes as U+FFFD
		}
	}
	return nil, p.fail("unterminated string")
}

func (p *parser) escape() (uint16, error) {
	if p.pos+1 >= len(p.src) {
		return 0, p.fail("unterminated escape")
	}
	c := p.src[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		return uint16(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		if p.pos+4 > len(p.src) {
			return 0, p.fail("short \\u escape")
		}
		n, err := strconv.ParseUint(string(p.src[p.pos:p.pos+4]), 16, 16)
		if err != nil {
			return 0, p.fail("bad \\u escape")
		}
		p.pos += 4
		return uint16(n), nil
	default:
		return 0, p.fail("bad escape")
	}
}

func (p *parser) number() (value, error) {
	start := p.pos
	if p.src[p.pos] == '-' {
		p.pos++
	}
	intStart := p.pos
	if n := p.digits(); n == 0 || (n > 1 && p.src[intStart] == '0') {
		return value{}, p.fail("bad number")
	}
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			return value{}, p.fail("bad number")
		}
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return value{}, p.fail("bad number")
		}
	}
	f, err := strconv.ParseFloat(string(p.src[start:p.pos]), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return value{}, p.fail("bad number")
	}
	return value{kind: 'l', raw: AppendNumber(nil, f)}, nil
}

// digits skips a run of decimal digits and returns its length.
func (p *parser) digits() int {
	n := 0
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
		n++
	}
	return n
}
