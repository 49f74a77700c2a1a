package resilience

import (
	"strings"
	"unicode/utf8"
)

// glob is a compiled method pattern, with the same language as the policy's method
// patterns (auth/policy): "*" matches any run of characters, dots included; "?" exactly one
// character; every other character itself. resilience may not import auth, so the matcher
// is written again here, small and allocation-free.
type glob struct {
	pattern string
	// literal counts the characters that are not wildcards: among patterns that match, the
	// one with more of them is the more specific.
	literal int
	exact   bool
}

func newGlob(pattern string) glob {
	wild := strings.Count(pattern, "*") + strings.Count(pattern, "?")
	return glob{pattern: pattern, literal: utf8.RuneCountInString(pattern) - wild, exact: wild == 0}
}

// match reports whether s matches the pattern, in O(len(pattern)·len(s)) at worst (the
// classic backtracking to the last star), never exponentially, and without allocating.
func (g glob) match(s string) bool {
	if g.exact {
		return s == g.pattern
	}
	p := g.pattern
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		pr, pw := rune(0), 0
		if pi < len(p) {
			pr, pw = utf8.DecodeRuneInString(p[pi:])
		}
		sr, sw := utf8.DecodeRuneInString(s[si:])
		switch {
		case pw > 0 && pr == '*':
			star, mark = pi, si
			pi += pw
		case pw > 0 && (pr == '?' || pr == sr):
			pi += pw
			si += sw
		case star >= 0:
			pi = star + 1
			_, mw := utf8.DecodeRuneInString(s[mark:])
			mark += mw
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
