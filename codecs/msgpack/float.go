package msgpack

import (
	"math"
	"slices"
	"strconv"
)

// appendFloat writes f, read from a float of bitSize bits, as a JSON number: the shortest
// decimal that reads back as f at that size, positional for 1e-6 ≤ |f| < 1e21 and
// scientific otherwise, and always with a fraction or an exponent so that it reads back
// as a float. ok is false for NaN and infinities.
func appendFloat(dst []byte, f float64, bitSize int) (out []byte, ok bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.AppendFloat(dst, f, 'e', -1, bitSize), true
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'f', -1, bitSize)
	if slices.Contains(dst[start:], '.') {
		return dst, true
	}
	return append(dst, '.', '0'), true
}
