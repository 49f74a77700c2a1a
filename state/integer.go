package state

import "math"

// maxIntDigits is the length of the longest int64 in decimal, sign excluded.
const maxIntDigits = 19

// parseInt parses b as Redis's INCRBY does (string2ll): the canonical decimal form of an
// int64, that is "0", or an optional '-' then a digit 1-9 then digits, in range. No '+',
// leading zeros, "-0", spaces or empty string.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > maxIntDigits || b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	// Accumulate negatively: the int64 range has one more negative value than positive.
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n < (math.MinInt64+d)/10 {
			return 0, false
		}
		n = n*10 - d
	}
	if neg {
		return n, true
	}
	if n == math.MinInt64 {
		return 0, false
	}
	return -n, true
}

// addInt returns a+b and whether it did not overflow.
func addInt(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}
