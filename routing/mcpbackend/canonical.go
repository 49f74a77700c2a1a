package mcpbackend

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// CanonicalJSON rewrites the JSON text src in canonical form: exactly what JavaScript's
// JSON.stringify(sortKeys(JSON.parse(src))) writes, where sortKeys orders every object's
// members by key in UTF-16 code unit order (JavaScript's default sort) — so that a
// JavaScript implementation reproduces the same bytes, and hashes of them agree:
//
//   - no insignificant whitespace;
//   - object members sorted by key; of duplicate keys the last one wins, as in JSON.parse;
//   - strings escaped as JSON.stringify does: \" \\ \b \f \n \r \t, other control
//     characters as \u00xx (lowercase hex), lone surrogates as \udxxx, everything else
//     (including '<', '>', '&', U+2028, U+2029 and any non-ASCII) written raw in UTF-8;
//   - numbers parsed as IEEE-754 doubles and written as ECMAScript's Number::toString
//     does: 1.0 → 1, 1e2 → 100, 1e21 → 1e+21, 1e-7 → 1e-7, 0.000001 → 0.000001, -0 → 0;
//     a number outside the double range (1e400) becomes null, as JSON.parse makes it
//     Infinity and JSON.stringify writes that as null.
//
// Invalid JSON and invalid UTF-8 outside strings are errors; invalid UTF-8 inside a
// string is read as U+FFFD, as a JavaScript text decoder would.
func CanonicalJSON(src []byte) ([]byte, error) {
	p := &canonParser{src: src}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(src) {
		return nil, p.errorf("unexpected data after the top-level value")
	}
	return v.appendTo(make([]byte, 0, len(src))), nil
}

// SchemaVersion returns the version hash of a tool's contract: the first 16 hex digits
// of the SHA-256 of CanonicalJSON({"inputSchema": input, "outputSchema": output}), with
// the outputSchema member left out when output is empty. In JavaScript:
//
//	sha256hex(canonical(JSON.stringify(output ? {inputSchema, outputSchema: output} : {inputSchema}))).slice(0, 16)
func SchemaVersion(input, output []byte) (string, error) {
	doc := make([]byte, 0, len(input)+len(output)+32)
	doc = append(doc, `{"inputSchema":`...)
	if len(input) == 0 {
		doc = append(doc, "null"...)
	} else {
		doc = append(doc, input...)
	}
	if len(output) > 0 {
		doc = append(doc, `,"outputSchema":`...)
		doc = append(doc, output...)
	}
	doc = append(doc, '}')
	return contentVersion(doc)
}

// contentVersion returns the first 16 hex digits of the SHA-256 of doc's canonical form.
func contentVersion(doc []byte) (string, error) {
	c, err := CanonicalJSON(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:8]), nil
}

// maxCanonDepth bounds nesting, so hostile input cannot exhaust the stack.
const maxCanonDepth = 512

var errCanonDepth = errors.New("canonical JSON: nesting too deep")

// canonValue is a parsed JSON value, ready to be written canonically.
type canonValue struct {
	kind    byte     // 'o' object, 'a' array, 's' string, 'l' literal or number (raw holds its canonical text)
	raw     []byte   // literal: canonical text
	units   []uint16 // string: UTF-16 code units
	members []canonMember
	items   []canonValue
}

type canonMember struct {
	key   []uint16
	value canonValue
}

func (v *canonValue) appendTo(dst []byte) []byte {
	switch v.kind {
	case 'o':
		dst = append(dst, '{')
		for i := range v.members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSString(dst, v.members[i].key)
			dst = append(dst, ':')
			dst = v.members[i].value.appendTo(dst)
		}
		return append(dst, '}')
	case 'a':
		dst = append(dst, '[')
		for i := range v.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = v.items[i].appendTo(dst)
		}
		return append(dst, ']')
	case 's':
		return appendJSString(dst, v.units)
	default:
		return append(dst, v.raw...)
	}
}

// appendJSString writes UTF-16 code units as JSON.stringify writes a string.
func appendJSString(dst []byte, units []uint16) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(units); i++ {
		u := units[i]
		switch {
		case u == '"':
			dst = append(dst, '\\', '"')
		case u == '\\':
			dst = append(dst, '\\', '\\')
		case u == '\b':
			dst = append(dst, '\\', 'b')
		case u == '\f':
			dst = append(dst, '\\', 'f')
		case u == '\n':
			dst = append(dst, '\\', 'n')
		case u == '\r':
			dst = append(dst, '\\', 'r')
		case u == '\t':
			dst = append(dst, '\\', 't')
		case u < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[u>>4], hexDigits[u&0xf])
		case utf16.IsSurrogate(rune(u)):
			if u < 0xdc00 && i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] <= 0xdfff {
				dst = utf8.AppendRune(dst, utf16.DecodeRune(rune(u), rune(units[i+1])))
				i++
				continue
			}
			dst = append(dst, '\\', 'u', hexDigits[u>>12], hexDigits[u>>8&0xf], hexDigits[u>>4&0xf], hexDigits[u&0xf])
		default:
			dst = utf8.AppendRune(dst, rune(u))
		}
	}
	return append(dst, '"')
}

type canonParser struct {
	src []byte
	pos int
}

func (p *canonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("canonical JSON: offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *canonParser) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *canonParser) value(depth int) (canonValue, error) {
	if depth > maxCanonDepth {
		return canonValue{}, errCanonDepth
	}
	p.skipSpace()
	if p.pos >= len(p.src) {
		return canonValue{}, p.errorf("unexpected end of input")
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		units, err := p.str()
		return canonValue{kind: 's', units: units}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(string(p.src[p.pos:min(len(p.src), p.pos+len(lit))]), lit) {
				p.pos += len(lit)
				return canonValue{kind: 'l', raw: []byte(lit)}, nil
			}
		}
		return canonValue{}, p.errorf("unexpected character %q", c)
	}
}

func (p *canonParser) object(depth int) (canonValue, error) {
	p.pos++ // '{'
	v := canonValue{kind: 'o'}
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return v, p.errorf("expected a member name")
		}
		key, err := p.str()
		if err != nil {
			return v, err
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return v, p.errorf("expected ':'")
		}
		p.pos++
		val, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		v.members = setMember(v.members, key, val)
		p.skipSpace()
		if p.pos >= len(p.src) {
			return v, p.errorf("unexpected end of input in an object")
		}
		if p.src[p.pos] == '}' {
			p.pos++
			slices.SortFunc(v.members, func(a, b canonMember) int { return slices.Compare(a.key, b.key) })
			return v, nil
		}
		if p.src[p.pos] != ',' {
			return v, p.errorf("expected ',' or '}'")
		}
		p.pos++
	}
}

// setMember adds a member, replacing an earlier one with the same key (JSON.parse keeps
// the last).
func setMember(ms []canonMember, key []uint16, val canonValue) []canonMember {
	for i := range ms {
		if slices.Equal(ms[i].key, key) {
			ms[i].value = val
			return ms
		}
	}
	return append(ms, canonMember{key: key, value: val})
}

func (p *canonParser) array(depth int) (canonValue, error) {
	p.pos++ // '['
	v := canonValue{kind: 'a'}
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
			return v, p.errorf("unexpected end of input in an array")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			return v, nil
		}
		if p.src[p.pos] != ',' {
			return v, p.errorf("expected ',' or ']'")
		}
		p.pos++
	}
}

// str reads a string literal into UTF-16 code units, keeping lone surrogates.
func (p *canonParser) str() ([]uint16, error) {
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
			return nil, p.errorf("control character in a string")
		case c < utf8.RuneSelf:
			units = append(units, uint16(c))
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.src[p.pos:])
			p.pos += size
			units = utf16.AppendRune(units, r) // an invalid byte decodes as U+FFFD
		}
	}
	return nil, p.errorf("unterminated string")
}

func (p *canonParser) escape() (uint16, error) {
	if p.pos+1 >= len(p.src) {
		return 0, p.errorf("unterminated escape")
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
			return 0, p.errorf("short \\u escape")
		}
		n, err := strconv.ParseUint(string(p.src[p.pos:p.pos+4]), 16, 16)
		if err != nil {
			return 0, p.errorf("bad \\u escape")
		}
		p.pos += 4
		return uint16(n), nil
	default:
		return 0, p.errorf("bad escape \\%c", c)
	}
}

func (p *canonParser) number() (canonValue, error) {
	start := p.pos
	if p.src[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	intStart := p.pos
	if n := digits(); n == 0 || (n > 1 && p.src[intStart] == '0') {
		return canonValue{}, p.errorf("bad number")
	}
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return canonValue{}, p.errorf("bad number")
		}
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return canonValue{}, p.errorf("bad number")
		}
	}
	f, err := strconv.ParseFloat(string(p.src[start:p.pos]), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return canonValue{}, p.errorf("bad number")
	}
	return canonValue{kind: 'l', raw: appendJSNumber(nil, f)}, nil
}

// appendJSNumber writes f as ECMAScript's Number::toString(10) does.
func appendJSNumber(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 0) || math.IsNaN(f):
		return append(dst, "null"...)
	case f == 0:
		return append(dst, '0')
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits d1…dk and exponent: f = 0.d1…dk × 10^n.
	e := strconv.FormatFloat(f, 'e', -1, 64) // "d.ddde±xx"
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}
