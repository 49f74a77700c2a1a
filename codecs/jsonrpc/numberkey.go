package jsonrpc

import (
	"math/big"
	"strconv"
	"strings"
)

// maxPlainExp is the largest exponent numberKey writes out as trailing zeros.
const maxPlainExp = 20

// numberKey returns a canonical text for the exact value of the JSON number raw: ok is
// false when raw is not a JSON number. Equal values give equal texts: the significant
// digits, without leading or trailing zeros, then either trailing zeros or "e" and a decimal
// exponent; every zero is "0".
func numberKey(raw string) (string, bool) {
	neg, intPart, frac, exp, ok := splitNumber(raw)
	if !ok {
		return "", false
	}
	all := strings.TrimLeft(intPart+frac, "0")
	if all == "" {
		return "0", true
	}
	sig := strings.TrimRight(all, "0")
	shift := int64(len(all)-len(sig)) - int64(len(frac)) // value = sig × 10^(exp+shift)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(sig)
	e, err := strconv.ParseInt(exp, 10, 64)
	switch {
	case err != nil || e > 1<<62 || e < -1<<62:
		n, _ := new(big.Int).SetString(exp, 10)
		b.WriteByte('e')
		b.WriteString(n.Add(n, big.NewInt(shift)).String())
	case e+shift >= 0 && e+shift <= maxPlainExp:
		b.WriteString(strings.Repeat("0", int(e+shift)))
	default:
		b.WriteByte('e')
		b.WriteString(strconv.FormatInt(e+shift, 10))
	}
	return b.String(), true
}

// splitNumber splits a JSON number into its sign, integer digits, fraction digits and
// exponent (with its sign; "0" when absent).
func splitNumber(s string) (neg bool, intPart, frac, exp string, ok bool) {
	if neg = strings.HasPrefix(s, "-"); neg {
		s = s[1:]
	}
	i := digitRun(s)
	if i == 0 {
		return false, "", "", "", false
	}
	intPart, s = s[:i], s[i:]
	if strings.HasPrefix(s, ".") {
		i = 1 + digitRun(s[1:])
		if i == 1 {
			return false, "", "", "", false
		}
		frac, s = s[1:i], s[i:]
	}
	exp = "0"
	if strings.HasPrefix(s, "e") || strings.HasPrefix(s, "E") {
		s = s[1:]
		sign := ""
		if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
			sign, s = strings.TrimPrefix(s[:1], "+"), s[1:]
		}
		i = digitRun(s)
		if i == 0 {
			return false, "", "", "", false
		}
		exp, s = sign+s[:i], s[i:]
	}
	return neg, intPart, frac, exp, s == ""
}

// digitRun returns the length of the run of ASCII digits s starts with.
func digitRun(s string) int {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}
