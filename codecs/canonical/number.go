package canonical

import (
	"math"
	"strconv"
	"strings"
)

// AppendNumber appends f as ECMAScript's Number::toString(10) writes it, which is also how
// JSON.stringify writes a number: the shortest digits that read back as f, in positional
// notation for exponents -7 < e < 21 and scientific notation ("1e+21", "1.5e-7")
// otherwise; -0 is written 0, and NaN and ±Infinity are written null.
func AppendNumber(dst []byte, f float64) []byte {
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
