package canonical

import (
	"errors"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of arrays and objects CanonicalJSON accepts, so that hostile
// input cannot exhaust the stack.
const MaxDepth = 512

// ErrTooDeep is the error CanonicalJSON returns for input nested deeper than MaxDepth.
var ErrTooDeep = errors.New("canonical JSON: nesting too deep")

// SyntaxError reports input that is not JSON. It never repeats the input.
type SyntaxError struct {
	// Offset is the byte offset in the input where the problem was found.
	Offset int
	// Reason says what was expected or found.
	Reason string
}

// Error returns "canonical JSON: offset N: reason".
func (e *SyntaxError) Error() string {
	return "canonical JSON: offset " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// CanonicalJSON rewrites the JSON text src in canonical form (see the package doc):
// exactly what JavaScript's JSON.stringify(sortKeys(JSON.parse(src))) writes.
func CanonicalJSON(src []byte) ([]byte, error) {
	p := &parser{src: src}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(src) {
		return nil, p.fail("unexpected data after the top-level value")
	}
	return v.appendTo(make([]byte, 0, len(src))), nil
}

// value is a parsed JSON value, ready to be written canonically.
type value struct {
	kind    byte     // 'o' object, 'a' array, 's' string, 'l' literal or number (raw holds its canonical text)
	raw     []byte   // literal: canonical text
	units   []uint16 // string: UTF-16 code units
	members []member
	items   []value
}

type member struct {
	key   []uint16
	value value
}

func (v *value) appendTo(dst []byte) []byte {
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

// sortMembers orders members by key in UTF-16 code unit order.
func sortMembers(ms []member) {
	slices.SortFunc(ms, func(a, b member) int { return slices.Compare(a.key, b.key) })
}

// setMember adds a member, replacing an earlier one with the same key (JSON.parse keeps
// the last).
func setMember(ms []member, key []uint16, val value) []member {
	for i := range ms {
		if slices.Equal(ms[i].key, key) {
			ms[i].value = val
			return ms
		}
	}
	return append(ms, member{key: key, value: val})
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
