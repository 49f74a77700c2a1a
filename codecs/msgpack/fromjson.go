package msgpack

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// FromJSON transcodes one JSON value to MessagePack (see the package doc). It makes two
// passes over the text: one to count the members of every array and object, since
// MessagePack writes a container's length before its contents, and one to write. Every
// error is an *Error.
func FromJSON(src []byte) ([]byte, error) {
	if !json.Valid(src) {
		return nil, &Error{Offset: validOffset(src), Reason: "not valid JSON"}
	}
	counts := countContainers(src)
	w := writer{out: make([]byte, 0, len(src))}
	s := scanner{src: src}
	next := 0 // index in counts of the next container to open
	for {
		kind, start, end := s.next()
		switch kind {
		case 0:
			return w.out, nil
		case '{':
			w.header(0x80, 0xde, 0xdf, counts[next]/2)
			next++
		case '[':
			w.header(0x90, 0xdc, 0xdd, counts[next])
			next++
		case '"':
			w.str(src[start:end])
		case 'n':
			if err := w.number(src[start:end]); err != nil {
				return nil, &Error{Offset: start, Reason: err.Error()}
			}
		case 't':
			w.out = append(w.out, 0xc3)
		case 'f':
			w.out = append(w.out, 0xc2)
		case 'z':
			w.out = append(w.out, 0xc0)
		}
	}
}

// validOffset returns the offset of the byte at which encoding/json found src to be
// invalid (its SyntaxError counts the bytes read, that one included), or 0.
func validOffset(src []byte) int {
	var v any
	if se, ok := errors.AsType[*json.SyntaxError](json.Unmarshal(src, &v)); ok {
		return max(0, int(se.Offset)-1)
	}
	return 0
}

// countContainers returns, for every array and object in order of their opening, how
// many values it holds directly (for an object, keys and values both count).
func countContainers(src []byte) []int {
	var counts, open []int
	s := scanner{src: src}
	for {
		kind, _, _ := s.next()
		switch kind {
		case 0:
			return counts
		case '}', ']':
			open = open[:len(open)-1]
			continue
		}
		if len(open) > 0 {
			counts[open[len(open)-1]]++
		}
		if kind == '{' || kind == '[' {
			open = append(open, len(counts))
			counts = append(counts, 0)
		}
	}
}

// scanner splits valid JSON text into tokens.
type scanner struct {
	src []byte
	pos int
}

// next returns the next token: its kind ('{', '}', '[', ']', '"' string, 'n' number, 't'
// true, 'f' false, 'z' null, 0 at the end) and its span (for a string, without the
// quotes). White space, commas and colons are skipped: the text is known to be valid.
func (s *scanner) next() (kind byte, start, end int) {
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch c {
		case ' ', '\t', '\n', '\r', ',', ':':
			s.pos++
		case '{', '}', '[', ']':
			s.pos++
			return c, s.pos - 1, s.pos
		case '"':
			start = s.pos + 1
			s.pos = start
			for s.src[s.pos] != '"' {
				if s.src[s.pos] == '\\' {
					s.pos++
				}
				s.pos++
			}
			s.pos++
			return '"', start, s.pos - 1
		case 't':
			s.pos += len("true")
			return 't', s.pos - 4, s.pos
		case 'f':
			s.pos += len("false")
			return 'f', s.pos - 5, s.pos
		case 'n':
			s.pos += len("null")
			return 'z', s.pos - 4, s.pos
		default:
			start = s.pos
			for s.pos < len(s.src) && isNumberByte(s.src[s.pos]) {
				s.pos++
			}
			return 'n', start, s.pos
		}
	}
	return 0, s.pos, s.pos
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// writer appends MessagePack values.
type writer struct{ out []byte }

// header writes a container header: the fix form (fix|n) for up to 15 elements, else the
// 16- or 32-bit form.
func (w *writer) header(fix, b16, b32 byte, n int) {
	switch {
	case n < 16:
		w.out = appendBE(w.out, lengthBits(n)|uint64(fix), 1)
	case n <= math.MaxUint16:
		w.out = appendBE(append(w.out, b16), lengthBits(n), 2)
	default:
		w.out = appendBE(append(w.out, b32), lengthBits(n), 4)
	}
}

// str writes a JSON string's contents (without quotes) as a str.
func (w *writer) str(raw []byte) {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		w.strBytes(raw)
		return
	}
	var s string
	quoted := make([]byte, 0, len(raw)+2)
	quoted = append(append(append(quoted, '"'), raw...), '"')
	_ = json.Unmarshal(quoted, &s) // valid: the whole text was
	w.strBytes([]byte(s))
}

func (w *writer) strBytes(b []byte) {
	switch n := len(b); {
	case n < 32:
		w.out = appendBE(w.out, lengthBits(n)|0xa0, 1)
	case n <= math.MaxUint8:
		w.out = appendBE(append(w.out, 0xd9), lengthBits(n), 1)
	case n <= math.MaxUint16:
		w.out = appendBE(append(w.out, 0xda), lengthBits(n), 2)
	default:
		w.out = appendBE(append(w.out, 0xdb), lengthBits(n), 4)
	}
	w.out = append(w.out, b...)
}

var errFloatRange = errors.New("number beyond the range of a double")

// number writes a JSON number: an integer when it is written without fraction or
// exponent and fits 64 bits, else a float64.
func (w *writer) number(text []byte) error {
	if !bytes.ContainsAny(text, ".eE") {
		if i, err := strconv.ParseInt(string(text), 10, 64); err == nil {
			w.int(i)
			return nil
		}
		if u, err := strconv.ParseUint(string(text), 10, 64); err == nil {
			w.uint(u)
			return nil
		}
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil && math.IsInf(f, 0) {
		return errFloatRange
	}
	w.out = appendBE(append(w.out, 0xcb), math.Float64bits(f), 8)
	return nil
}

func (w *writer) uint(u uint64) {
	switch {
	case u <= 0x7f:
		w.out = appendBE(w.out, u, 1)
	case u <= math.MaxUint8:
		w.out = appendBE(append(w.out, 0xcc), u, 1)
	case u <= math.MaxUint16:
		w.out = appendBE(append(w.out, 0xcd), u, 2)
	case u <= math.MaxUint32:
		w.out = appendBE(append(w.out, 0xce), u, 4)
	default:
		w.out = appendBE(append(w.out, 0xcf), u, 8)
	}
}

func (w *writer) int(i int64) {
	switch {
	case i >= 0:
		w.uint(bitsOf(i))
	case i >= -32:
		w.out = appendBE(w.out, bitsOf(i), 1) // negative fixint: 0xe0 … 0xff
	case i >= math.MinInt8:
		w.out = appendBE(append(w.out, 0xd0), bitsOf(i), 1)
	case i >= math.MinInt16:
		w.out = appendBE(append(w.out, 0xd1), bitsOf(i), 2)
	case i >= math.MinInt32:
		w.out = appendBE(append(w.out, 0xd2), bitsOf(i), 4)
	default:
		w.out = appendBE(append(w.out, 0xd3), bitsOf(i), 8)
	}
}
