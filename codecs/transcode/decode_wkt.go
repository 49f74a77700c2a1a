package transcode

import (
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// This file writes the JSON forms of the well-known types, following protojson's
// well_known_types.go rule for rule, errors included.

// wellKnown writes well-known type m, indexed at base, from its wire bytes b.
func (d *decoder) wellKnown(m *message, b []byte, base, depth int) *PathError {
	switch m.wkt {
	case wktTimestamp:
		return d.timestamp(d.intField(m, base, 1), d.intField(m, base, 2))
	case wktDuration:
		return d.duration(d.intField(m, base, 1), d.intField(m, base, 2))
	case wktWrapper:
		f := &m.fields[0]
		if s := d.slots[base]; s.tail >= 0 {
			o := d.occs[s.tail]
			return d.scalar(f, o.v, b[o.start:o.end])
		}
		return d.scalar(f, 0, nil)
	case wktStruct:
		if s := d.slots[base]; s.tail >= 0 {
			return d.mapValue(&m.fields[0], b, s, depth)
		}
		d.out = append(d.out, "{}"...)
		return nil
	case wktListValue:
		_, err := d.list(&m.fields[0], b, d.slots[base], depth)
		return err
	case wktValue:
		return d.knownValue(m, b, base, depth)
	case wktFieldMask:
		return d.fieldMask(b, d.slots[base])
	}
	return d.anyMessage(m, b, base, depth)
}

// intField returns the int64 or int32 field numbered num of m, indexed at base.
func (d *decoder) intField(m *message, base int, num protowire.Number) int64 {
	i := m.fieldByNum(num)
	if i < 0 {
		return 0
	}
	s := d.slots[base+i]
	if s.tail < 0 {
		return 0
	}
	v := d.occs[s.tail].v
	if m.fields[i].kind == protoreflect.Int32Kind {
		return int64(trunc32(v))
	}
	return signed(v)
}

// timestamp writes a Timestamp as an RFC 3339 string in UTC with 0, 3, 6 or 9
// fractional digits.
func (d *decoder) timestamp(secs, nanos int64) *PathError {
	if secs < minTimestampSeconds || secs > maxTimestampSeconds {
		return fail("google.protobuf.Timestamp seconds out of range")
	}
	if nanos < 0 || nanos > maxNanos {
		return fail("google.protobuf.Timestamp nanos out of range")
	}
	d.out = append(d.out, '"')
	d.out = time.Unix(secs, nanos).UTC().AppendFormat(d.out, "2006-01-02T15:04:05")
	d.out = appendFraction(d.out, nanos)
	d.out = append(d.out, 'Z', '"')
	return nil
}

// appendFraction appends the nanoseconds nanos as a fraction of 0, 3, 6 or 9 digits.
func appendFraction(out []byte, nanos int64) []byte {
	if nanos == 0 {
		return out
	}
	digits := 9
	for nanos%1000 == 0 && digits > 3 {
		nanos /= 1000
		digits -= 3
	}
	out = append(out, '.')
	var buf [9]byte
	for i := digits - 1; i >= 0; i-- {
		buf[i] = byte('0' + nanos%10)
		nanos /= 10
	}
	return append(out, buf[:digits]...)
}

// duration writes a Duration as a decimal number of seconds with an "s" suffix.
func (d *decoder) duration(secs, nanos int64) *PathError {
	if secs < -maxDurationSeconds || secs > maxDurationSeconds {
		return fail("google.protobuf.Duration seconds out of range")
	}
	if nanos < -maxNanos || nanos > maxNanos {
		return fail("google.protobuf.Duration nanos out of range")
	}
	if secs > 0 && nanos < 0 || secs < 0 && nanos > 0 {
		return fail("google.protobuf.Duration seconds and nanos differ in sign")
	}
	d.out = append(d.out, '"')
	if secs < 0 || nanos < 0 {
		d.out = append(d.out, '-')
		secs, nanos = -secs, -nanos
	}
	d.out = appendInt(d.out, secs)
	d.out = appendFraction(d.out, nanos)
	d.out = append(d.out, 's', '"')
	return nil
}

// knownValue writes a google.protobuf.Value as the JSON value its kind holds.
func (d *decoder) knownValue(m *message, b []byte, base, depth int) *PathError {
	w := d.slots[base+len(m.fields)].head
	if w < 0 {
		return fail("google.protobuf.Value has no kind set")
	}
	f := &m.fields[w]
	s := d.slots[base+int(w)]
	switch f.num {
	case 1:
		d.out = append(d.out, "null"...)
		return nil
	case 2:
		if x := math.Float64frombits(d.occs[s.tail].v); math.IsNaN(x) || math.IsInf(x, 0) {
			return fail("google.protobuf.Value cannot hold NaN or an infinity")
		}
	}
	_, err := d.value1(f, b, s, depth)
	return err
}

// value1 writes the value of field f, as value does but for a Value's member.
func (d *decoder) value1(f *field, b []byte, s slot, depth int) (bool, *PathError) {
	if f.isMessage() {
		return true, d.messageValue(f.msg, b, s, depth)
	}
	o := d.occs[s.tail]
	return true, d.scalar(f, o.v, b[o.start:o.end])
}

// fieldMask writes a FieldMask as its paths in lowerCamel form joined by commas. A path
// that is not a valid name, or whose camel form would not convert back, is an error.
func (d *decoder) fieldMask(b []byte, s slot) *PathError {
	d.out = append(d.out, '"')
	first := true
	for o := s.head; o >= 0; o = d.occs[o].next {
		p := b[d.occs[o].start:d.occs[o].end]
		if !protoreflect.FullName(p).IsValid() {
			return fail("google.protobuf.FieldMask holds an invalid path")
		}
		if !first {
			d.out = append(d.out, ',')
		}
		first = false
		start := len(d.out)
		upper := false
		for _, c := range p {
			if c == '_' {
				upper = true
				continue
			}
			if upper && 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			upper = false
			d.out = append(d.out, c)
		}
		if !snakeOf(d.out[start:], p) {
			return fail("google.protobuf.FieldMask holds a path that does not convert to lowerCamel")
		}
	}
	d.out = append(d.out, '"')
	return nil
}

// snakeOf reports whether snake is the snake_case form of camel, as protojson converts.
func snakeOf(camel, snake []byte) bool {
	j := 0
	for _, c := range camel {
		if 'A' <= c && c <= 'Z' {
			if j+1 >= len(snake) || snake[j] != '_' || snake[j+1] != c+'a'-'A' {
				return false
			}
			j += 2
			continue
		}
		if j >= len(snake) || snake[j] != c {
			return false
		}
		j++
	}
	return j == len(snake)
}

// anyMessage writes a google.protobuf.Any as the JSON form of the message it holds, with
// an "@type" member; a well-known type goes in a "value" member.
func (d *decoder) anyMessage(m *message, b []byte, base, depth int) *PathError {
	var url, val []byte
	if s := d.slots[base+m.fieldByNum(1)]; s.tail >= 0 {
		url = b[d.occs[s.tail].start:d.occs[s.tail].end]
	}
	if s := d.slots[base+m.fieldByNum(2)]; s.tail >= 0 {
		val = b[d.occs[s.tail].start:d.occs[s.tail].end]
	}
	if len(url) == 0 {
		if len(val) == 0 {
			d.out = append(d.out, "{}"...)
			return nil
		}
		return fail("google.protobuf.Any has a value but no type_url")
	}
	em, err := d.plan.resolveAny(string(url))
	if err != nil {
		return fail("cannot resolve the type of a google.protobuf.Any")
	}
	d.out = append(d.out, `{"@type":`...)
	d.out, _ = appendJSONString(d.out, url) // type_url is valid UTF-8: proto3 checked it
	d.inAny++
	defer func() { d.inAny-- }()
	if em.wkt != wktNone && em.wkt != wktEmpty {
		d.out = append(d.out, `,"value":`...)
		if err := d.message(em, val, depth); err != nil {
			return err.inField([]byte("value"))
		}
		d.out = append(d.out, '}')
		return nil
	}
	if depth--; depth < 0 {
		return fail(reasonDepth)
	}
	ebase, obase, perr := d.index(em, val, depth)
	if perr != nil {
		return perr
	}
	perr = d.fields(em, val, ebase, depth, len(d.out)-1)
	d.slots, d.occs = d.slots[:ebase], d.occs[:obase]
	d.out = append(d.out, '}')
	return perr
}
