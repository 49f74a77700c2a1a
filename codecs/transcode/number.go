package transcode

import (
	"math"
	"strconv"
)

// This file reads JSON numbers the way protojson does. An integer field takes any number
// token whose value is an exact integer in range, whatever its spelling (1.0, 1e2 and
// 0.1e1 are all integers), and the same text quoted in a string. A float field takes any
// number strconv.ParseFloat reads in range, the same quoted, and "NaN", "Infinity" and
// "-Infinity".

// intText returns the sign and decimal digits of the integer the number token raw
// denotes, or ok=false when it is not an integer. buf holds digits that must be built.
func intText(raw []byte, buf *[24]byte) (neg bool, digits []byte, ok bool) {
	s := raw
	if s[0] == '-' {
		neg, s = true, s[1:]
	}
	var intp, frac, exp []byte
	if s[0] == '0' {
		s = s[1:]
	} else {
		i := 1
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		intp, s = s[:i], s[i:]
	}
	if len(s) == 0 { // the common case: plain digits
		if len(intp) == 0 {
			return false, nil, true
		}
		return neg, intp, true
	}
	if len(s) >= 2 && s[0] == '.' && isDigit(s[1]) {
		i := 1
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		frac, s = s[1:i], s[i:]
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		exp = s[1:]
	}
	for len(frac) > 0 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	if len(intp) == 0 && len(frac) == 0 {
		return false, nil, true
	}
	e := 0
	if len(exp) > 0 {
		v, ok := parseDecimal(exp, true, 32)
		if !ok {
			return false, nil, false
		}
		e = int(signed(v))
	}
	if e >= 0 {
		const maxDigits = 20 // as many as math.MaxUint64 has
		if len(frac) > e || len(intp)+e > maxDigits {
			return false, nil, false
		}
		d := append(append(buf[:0], intp...), frac...)
		for range e - len(frac) {
			d = append(d, '0')
		}
		return neg, d, true
	}
	if len(frac) > 0 || len(intp)+e < 0 {
		return false, nil, false
	}
	idx := len(intp) + e
	for _, c := range intp[idx:] {
		if c != '0' {
			return false, nil, false
		}
	}
	return neg, intp[:idx], true
}

// magnitude returns the value of the decimal digits d, reporting overflow.
func magnitude(d []byte) (uint64, bool) {
	var v uint64
	for _, c := range d {
		x := uint64(c - '0')
		if v > math.MaxUint64/10 || v*10 > math.MaxUint64-x {
			return 0, false
		}
		v = v*10 + x
	}
	return v, true
}

// toInt converts a sign and magnitude to an integer of the given size.
func toInt(neg bool, mag uint64, bits int, signed bool) (uint64, bool) {
	if !signed {
		if neg || bits == 32 && mag > math.MaxUint32 {
			return 0, false
		}
		return mag, true
	}
	limit := uint64(1) << (bits - 1)
	if neg {
		if mag > limit {
			return 0, false
		}
		return -mag, true
	}
	if mag >= limit {
		return 0, false
	}
	return mag, true
}

// parseIntToken returns the integer the number token raw denotes, as two's complement
// bits, for a field of the given size and signedness.
func parseIntToken(raw []byte, bits int, signed bool) (uint64, bool) {
	var buf [24]byte
	neg, d, ok := intText(raw, &buf)
	if !ok {
		return 0, false
	}
	mag, ok := magnitude(d)
	if !ok {
		return 0, false
	}
	return toInt(neg, mag, bits, signed)
}

// parseDecimal parses s as strconv.ParseInt(s, 10, bits) or ParseUint does: an optional
// sign for signed numbers, then at least one digit.
func parseDecimal(s []byte, signed bool, bits int) (uint64, bool) {
	neg := false
	if signed && len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	for _, c := range s {
		if !isDigit(c) {
			return 0, false
		}
	}
	mag, ok := magnitude(s)
	if !ok {
		return 0, false
	}
	return toInt(neg && mag != 0, mag, bits, signed)
}

// parseFloat parses the number text s for a float of the given size.
func parseFloat(s []byte, bits int) (float64, bool) {
	f, err := strconv.ParseFloat(string(s), bits)
	return f, err == nil
}

// isNumberText reports whether s is exactly one number token: what protojson accepts
// inside a string for a numeric field.
func isNumberText(s []byte) bool {
	end, ok := scanNumber(s, 0)
	return ok && end == len(s)
}

// appendInt appends the decimal form of v.
func appendInt(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) }

// appendFloat appends f as protojson writes a float of the given size.
func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// Clean up e-09 to e-9.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
