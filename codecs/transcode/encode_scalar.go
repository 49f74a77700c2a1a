package transcode

import (
	"bytes"
	"encoding/base64"
	"math"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// This file reads the scalar values of EncodeJSON: numbers, bools, enums, strings; and
// keeps the set of fields an open message has seen.

// scalarField encodes the scalar at e.pos as field f, tag included; a zero value is
// left out unless force. It reports whether the value was an unknown enum name that
// DiscardUnknown dropped.
func (e *encoder) scalarField(f *field, force bool) (bool, *PathError) {
	switch f.kind {
	case protoreflect.StringKind:
		s, err := e.stringValue()
		if err != nil {
			return false, err
		}
		if len(s) > 0 || force {
			e.out = append(e.out, f.tag...)
			e.out = protowire.AppendBytes(e.out, s)
		}
		return false, nil
	case protoreflect.BytesKind:
		b, err := e.bytesValue()
		if err != nil {
			return false, err
		}
		if len(b) > 0 || force {
			e.out = append(e.out, f.tag...)
			e.out = protowire.AppendBytes(e.out, b)
		}
		return false, nil
	}
	v, skip, err := e.numeric(f)
	if err != nil || skip {
		return skip, err
	}
	if v != 0 || force {
		e.out = append(e.out, f.tag...)
		e.out = appendBits(e.out, f.wt, v)
	}
	return false, nil
}

// appendBits appends the wire form of v for wire type wt.
func appendBits(out []byte, wt protowire.Type, v uint64) []byte {
	switch wt {
	case protowire.Fixed32Type:
		return protowire.AppendFixed32(out, low32(v))
	case protowire.Fixed64Type:
		return protowire.AppendFixed64(out, v)
	}
	if v < 0x80 {
		return append(out, byte(v))
	}
	return protowire.AppendVarint(out, v)
}

// numeric reads the bool, number or enum at e.pos for field f and returns its wire bits.
// skip reports an unknown enum name dropped under DiscardUnknown.
func (e *encoder) numeric(f *field) (v uint64, skip bool, err *PathError) {
	e.ws()
	switch f.kind {
	case protoreflect.BoolKind:
		switch {
		case e.peek() == 't' && e.lit("true"):
			return 1, false, nil
		case e.peek() == 'f' && e.lit("false"):
			return 0, false, nil
		}
		return 0, false, e.want("boolean")
	case protoreflect.EnumKind:
		return e.enumValue(f.enum)
	case protoreflect.FloatKind:
		x, err := e.float(32)
		return uint64(math.Float32bits(float32(x))), false, err
	case protoreflect.DoubleKind:
		x, err := e.float(64)
		return math.Float64bits(x), false, err
	}
	bits := 64
	if is32(f.kind) {
		bits = 32
	}
	x, err := e.integer(bits, isSigned(f.kind))
	if err != nil {
		return 0, false, err
	}
	switch f.kind {
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return protowire.EncodeZigZag(signed(x)), false, nil
	case protoreflect.Sfixed32Kind:
		return uint64(low32(x)), false, nil
	}
	return x, false, nil
}

func isSigned(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return true
	}
	return false
}

func is32(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return true
	}
	return false
}

// integer reads the integer at e.pos, a number or a string holding one (not under
// Options.StrictNumbers), and returns it as two's complement bits.
func (e *encoder) integer(bits int, signed bool) (uint64, *PathError) {
	text, quoted, err := e.numberToken("integer")
	if err != nil {
		return 0, err
	}
	if quoted && e.strict {
		return 0, errQuotedInteger()
	}
	if quoted && !isNumberText(text) {
		return 0, fail("want integer, got string")
	}
	v, ok := parseIntToken(text, bits, signed)
	if !ok {
		return 0, fail(intReason(bits, signed))
	}
	return v, nil
}

// numberToken reads the number at e.pos, bare or inside a string (quoted), as protojson
// accepts both; a value of any other kind is refused as want.
func (e *encoder) numberToken(want string) (text []byte, quoted bool, err *PathError) {
	switch c := e.peek(); {
	case c == '-' || isDigit(c):
		end, ok := scanNumber(e.in, e.pos)
		if !ok {
			return nil, false, e.syntax()
		}
		text, e.pos = e.in[e.pos:end], end
		return text, false, nil
	case c == '"':
		s, err := e.stringValue()
		return s, true, err
	}
	return nil, false, e.want(want)
}

// errQuotedInteger refuses a quoted integer under Options.StrictNumbers.
func errQuotedInteger() *PathError {
	return fail("want integer as a JSON number, got string (strict_numbers)")
}

func intReason(bits int, signed bool) string {
	switch {
	case bits == 32 && signed:
		return "want integer in the int32 range"
	case bits == 32:
		return "want integer in the uint32 range"
	case signed:
		return "want integer in the int64 range"
	}
	return "want integer in the uint64 range"
}

// float reads the number at e.pos, or a string holding one or NaN or an infinity.
func (e *encoder) float(bits int) (float64, *PathError) {
	text, quoted, err := e.numberToken("number")
	if err != nil {
		return 0, err
	}
	if quoted {
		switch string(text) {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
		if !isNumberText(text) {
			return 0, fail("want number, got string")
		}
	}
	x, ok := parseFloat(text, bits)
	if !ok {
		if bits == 32 {
			return 0, fail("want number in the float range")
		}
		return 0, fail("want number in the double range")
	}
	return x, nil
}

// enumValue reads an enum value at e.pos: a name, a number, or null for NullValue.
func (e *encoder) enumValue(en *enumInfo) (uint64, bool, *PathError) {
	switch c := e.peek(); {
	case c == '"':
		s, err := e.stringValue()
		if err != nil {
			return 0, false, err
		}
		if i := en.names.lookupBytes(s); i >= 0 {
			return bitsOf(int64(en.values[i])), false, nil
		}
		if e.discard {
			return 0, true, nil
		}
		return 0, false, fail("unknown enum value name")
	case c == '-' || isDigit(c):
		end, ok := scanNumber(e.in, e.pos)
		if !ok {
			return 0, false, e.syntax()
		}
		v, ok := parseIntToken(e.in[e.pos:end], 32, true)
		if !ok {
			return 0, false, fail("want enum number in the int32 range")
		}
		e.pos = end
		return v, false, nil
	case c == 'n' && en.null && e.lit("null"):
		return 0, false, nil
	}
	return 0, false, e.want("enum name or number")
}

// stringValue reads the string at e.pos and returns its unescaped contents, which stay
// valid until the next string is read.
func (e *encoder) stringValue() ([]byte, *PathError) {
	e.ws()
	if e.peek() != '"' {
		return nil, e.want("string")
	}
	start, end, esc, err := e.str()
	if err != nil {
		return nil, err
	}
	if !esc {
		return e.in[start:end], nil
	}
	e.sbuf = unescape(e.sbuf[:0], e.in[start:end])
	return e.sbuf, nil
}

// seenSet records the fields and oneofs of an open message that have a value: in small
// for messages with at most 64 of them, else in encoder.bits from base.
type seenSet struct {
	small uint64
	base  int
}

func (e *encoder) openSeen(m *message) seenSet {
	if m.bits <= 64 {
		return seenSet{base: -1}
	}
	base := len(e.bits)
	for range (m.bits + 63) / 64 {
		e.bits = append(e.bits, 0)
	}
	return seenSet{base: base}
}

func (e *encoder) closeSeen(s seenSet) {
	if s.base >= 0 {
		e.bits = e.bits[:s.base]
	}
}

// testAndSet adds i to s and reports whether it was already there.
func (e *encoder) testAndSet(s *seenSet, i int) bool {
	if s.base < 0 {
		bit := uint64(1) << i
		had := s.small&bit != 0
		s.small |= bit
		return had
	}
	w, bit := &e.bits[s.base+i/64], uint64(1)<<(i%64)
	had := *w&bit != 0
	*w |= bit
	return had
}

// Base64 encodings protojson accepts: standard or URL alphabet, padded or not.
var (
	b64Std    = base64.StdEncoding
	b64URL    = base64.URLEncoding
	b64RawStd = base64.StdEncoding.WithPadding(base64.NoPadding)
	b64RawURL = base64.URLEncoding.WithPadding(base64.NoPadding)
)

// bytesValue reads a base64 string at e.pos and returns the bytes it encodes, valid until
// the next call.
func (e *encoder) bytesValue() ([]byte, *PathError) {
	s, err := e.stringValue()
	if err != nil {
		return nil, err
	}
	enc := b64Std
	url := bytes.ContainsAny(s, "-_")
	switch {
	case url && len(s)%4 != 0:
		enc = b64RawURL
	case url:
		enc = b64URL
	case len(s)%4 != 0:
		enc = b64RawStd
	}
	e.bin = slices.Grow(e.bin[:0], enc.DecodedLen(len(s)))
	n, derr := enc.Decode(e.bin[:cap(e.bin)], s)
	if derr != nil {
		return nil, fail("invalid base64")
	}
	return e.bin[:n], nil
}
