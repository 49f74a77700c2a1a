package policy

import "strings"

// glob is a compiled match pattern: "*" matches any run of characters, "?" exactly one
// (byte-wise for ASCII, one rune otherwise), every other character itself.
type glob struct {
	pattern string
	// literal is the count of characters that are not wildcards; among glob matches the
	// pattern with more of them is the more specific.
	literal int
	exact   bool
}

func newGlob(pattern string) glob {
	wild := strings.Count(pattern, "*") + strings.Count(pattern, "?")
	return glob{pattern: pattern, literal: len([]rune(pattern)) - wild, exact: wild == 0}
}

// match reports whether s matches the pattern. It runs in O(len(pattern)·len(s)) at worst
// (the classic backtracking to the last star), never exponentially.
func (g glob) match(s string) bool {
	if g.exact {
		return s == g.pattern
	}
	p := []rune(g.pattern)
	r := []rune(s)
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(r) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == r[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
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
