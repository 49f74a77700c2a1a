package transcode

import (
	"bytes"
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// This file encodes the JSON forms of the well-known types, following protojson's
// well_known_types.go rule for rule.

// Tags of the well-known types' fields, fixed by descriptor.proto's siblings.
const (
	tagVarint1 = 1<<3 | byte(protowire.VarintType)
	tagVarint2 = 2<<3 | byte(protowire.VarintType)
	tagBytes1  = 1<<3 | byte(protowire.BytesType)
	tagBytes2  = 2<<3 | byte(protowire.BytesType)
)

// wellKnown encodes the JSON value at e.pos as well-known type m.
func (e *encoder) wellKnown(m *message, depth int) *PathError {
	switch m.wkt {
	case wktAny:
		return e.anyMessage(m, depth)
	case wktTimestamp:
		return e.timestamp()
	case wktDuration:
		return e.duration()
	case wktStruct, wktListValue:
		f := &m.fields[0]
		if f.card == cardMap {
			return e.mapField(f, depth)
		}
		return e.list(f, depth)
	case wktValue:
		return e.value(m, depth)
	case wktFieldMask:
		return e.fieldMask()
	case wktWrapper:
		e.ws()
		_, err := e.scalarField(&m.fields[0], false)
		return err
	}
	return e.object(m, depth, false) // google.protobuf.Empty
}

// value encodes any JSON value as google.protobuf.Value m.
func (e *encoder) value(m *message, depth int) *PathError {
	e.ws()
	byNum := func(n protowire.Number) *field { return &m.fields[m.fieldByNum(n)] }
	switch c := e.peek(); {
	case c == 'n' && e.lit("null"):
		e.out = append(e.out, byNum(1).tag...)
		e.out = append(e.out, 0)
	case c == 't' && e.lit("true"):
		e.out = append(e.out, byNum(4).tag...)
		e.out = append(e.out, 1)
	case c == 'f' && e.lit("false"):
		e.out = append(e.out, byNum(4).tag...)
		e.out = append(e.out, 0)
	case c == '-' || isDigit(c):
		end, ok := scanNumber(e.in, e.pos)
		if !ok {
			return e.syntax()
		}
		x, ok := parseFloat(e.in[e.pos:end], 64)
		if !ok {
			return fail("want number in the double range")
		}
		e.pos = end
		e.out = append(e.out, byNum(2).tag...)
		e.out = protowire.AppendFixed64(e.out, math.Float64bits(x))
	case c == '"':
		s, err := e.stringValue()
		if err != nil {
			return err
		}
		e.out = append(e.out, byNum(3).tag...)
		e.out = protowire.AppendBytes(e.out, s)
	case c == '{' || c == '[':
		f := byNum(5)
		if c == '[' {
			f = byNum(6)
		}
		e.out = append(e.out, f.tag...)
		pos := len(e.out)
		e.out = append(e.out, 0)
		// protojson decodes the Struct or ListValue here without counting a level.
		if err := e.wellKnown(f.msg, depth); err != nil {
			return err
		}
		e.out = finishLen(e.out, pos)
	default:
		return e.want("JSON value")
	}
	return nil
}

// Limits of Timestamp and Duration, as protojson checks them.
const (
	maxTimestampSeconds = 253402300799
	minTimestampSeconds = -62135596800
	maxDurationSeconds  = 315576000000
	maxNanos            = 999999999
)

// timestamp encodes an RFC 3339 string as google.protobuf.Timestamp.
func (e *encoder) timestamp() *PathError {
	e.ws()
	s, err := e.stringValue()
	if err != nil {
		return err
	}
	secs, nanos, ok := parseTimestamp(s)
	if !ok {
		return fail("invalid google.protobuf.Timestamp")
	}
	if secs < minTimestampSeconds || secs > maxTimestampSeconds {
		return fail("google.protobuf.Timestamp out of range")
	}
	e.appendSecondsNanos(secs, nanos)
	return nil
}

func (e *encoder) appendSecondsNanos(secs int64, nanos int32) {
	if secs != 0 {
		e.out = protowire.AppendVarint(append(e.out, tagVarint1), bitsOf(secs))
	}
	if nanos != 0 {
		e.out = protowire.AppendVarint(append(e.out, tagVarint2), bitsOf(int64(nanos)))
	}
}

// parseTimestamp parses s as time.Parse(time.RFC3339Nano) does, refusing more than nine
// fractional digits as protojson does. The common UTC form is parsed without time.Parse.
func parseTimestamp(s []byte) (secs int64, nanos int32, ok bool) {
	if secs, nanos, ok := parseUTC(s); ok {
		return secs, nanos, true
	}
	t, err := time.Parse(time.RFC3339Nano, string(s))
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(s, '.')
	j := bytes.LastIndexAny(s, "Z-+")
	if i >= 0 && j >= i && j-i > len(".999999999") {
		return 0, 0, false
	}
	return t.Unix(), narrow(int64(t.Nanosecond())), true
}

// parseUTC parses "YYYY-MM-DDTHH:MM:SS[.fffffffff]Z" with a valid date and time; for
// anything else it returns false and leaves the decision to time.Parse.
func parseUTC(s []byte) (int64, int32, bool) {
	const n = len("2006-01-02T15:04:05Z")
	if len(s) < n || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return 0, 0, false
	}
	num := func(i, w int) int {
		v := 0
		for _, c := range s[i : i+w] {
			if !isDigit(c) {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day := num(0, 4), num(5, 2), num(8, 2)
	hour, minute, sec := num(11, 2), num(14, 2), num(17, 2)
	if year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return 0, 0, false
	}
	if day > daysIn(month, year) {
		return 0, 0, false
	}
	var nanos int32
	if frac := s[19 : len(s)-1]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return 0, 0, false
		}
		v := num(20, len(frac)-1)
		if v < 0 {
			return 0, 0, false
		}
		for range 10 - len(frac) {
			v *= 10
		}
		nanos = narrow(int64(v))
	}
	days := daysFromCivil(year, month, day)
	return days*86400 + int64(hour*3600+minute*60+sec), nanos, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the number of days from 1970-01-01 to the given proleptic
// Gregorian date (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// duration encodes a "1.5s" string as google.protobuf.Duration.
func (e *encoder) duration() *PathError {
	e.ws()
	s, err := e.stringValue()
	if err != nil {
		return err
	}
	secs, nanos, ok := parseDuration(s)
	if !ok {
		return fail("invalid google.protobuf.Duration")
	}
	if secs < -maxDurationSeconds || secs > maxDurationSeconds {
		return fail("google.protobuf.Duration out of range")
	}
	e.appendSecondsNanos(secs, nanos)
	return nil
}

// parseDuration parses a decimal number of seconds with an "s" suffix, an optional sign
// and at most nine fractional digits, as protojson does.
func parseDuration(b []byte) (int64, int32, bool) {
	if len(b) < 2 || b[len(b)-1] != 's' {
		return 0, 0, false
	}
	b = b[:len(b)-1]
	neg := false
	switch b[0] {
	case '-':
		neg, b = true, b[1:]
	case '+':
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, 0, false
	}
	var intp []byte
	switch {
	case b[0] == '0':
		b = b[1:]
	case '1' <= b[0] && b[0] <= '9':
		i := 1
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		intp, b = b[:i], b[i:]
	case b[0] == '.':
	default:
		return 0, 0, false
	}
	var nanos int64
	if len(b) > 0 {
		if b[0] != '.' {
			return 0, 0, false
		}
		b = b[1:]
		n := 0
		for len(b) > 0 && n < 9 && isDigit(b[0]) {
			nanos = nanos*10 + int64(b[0]-'0')
			n++
			b = b[1:]
		}
		if len(b) > 0 {
			return 0, 0, false
		}
		for ; n < 9; n++ {
			nanos *= 10
		}
	}
	var secs int64
	if len(intp) > 0 {
		v, ok := parseDecimal(intp, true, 64)
		if !ok {
			return 0, 0, false
		}
		secs = signed(v)
	}
	if neg {
		secs, nanos = -secs, -nanos
	}
	return secs, int32(nanos), true
}

// fieldMask encodes a comma-separated list of lowerCamel paths as
// google.protobuf.FieldMask.
func (e *encoder) fieldMask() *PathError {
	e.ws()
	s, err := e.stringValue()
	if err != nil {
		return err
	}
	s = bytes.TrimSpace(s)
	if len(s) == 0 {
		return nil
	}
	for {
		path := s
		i := bytes.IndexByte(s, ',')
		if i >= 0 {
			path = s[:i]
		}
		mark := len(e.out)
		e.out = append(e.out, tagBytes1, 0)
		for _, c := range path {
			if 'A' <= c && c <= 'Z' {
				e.out = append(e.out, '_', c+'a'-'A')
			} else {
				e.out = append(e.out, c)
			}
		}
		snake := e.out[mark+2:]
		if bytes.IndexByte(path, '_') >= 0 || !protoreflect.FullName(snake).IsValid() {
			return fail("invalid google.protobuf.FieldMask path")
		}
		e.out = finishLen(e.out, mark+1)
		if i < 0 {
			return nil
		}
		s = s[i+1:]
	}
}
