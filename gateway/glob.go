package gateway

import (
	"strings"
	"unicode/utf8"
)

// Glob is a compiled method pattern, the one pattern language of the configuration (policy
// rules, rate-limit rules): "*" matches any run of characters, separators included; "?"
// exactly one character (rune); every other character itself. Matching never allocates.
type Glob struct {
	pattern string
	literal int
	exact   bool
}

// NewGlob compiles pattern.
func NewGlob(pattern string) Glob {
	wild := strings.Count(pattern, "*") + strings.Count(pattern, "?")
	return Glob{pattern: pattern, literal: utf8.RuneCountInString(pattern) - wild, exact: wild == 0}
}

// Match reports whether s matches the pattern, in O(len(pattern)·len(s)) at worst (the
// classic backtracking to the last star), never exponentially, and without allocating.
func (g Glob) Match(s string) bool {
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

// Pattern returns the pattern as written.
func (g Glob) Pattern() string { return g.pattern }

// Literal counts the pattern's characters that are not wildcards: among patterns that
// match, the one with more of them is the more specific.
func (g Glob) Literal() int { return g.literal }

// Exact reports whether the pattern has no wildcard (it matches itself only).
func (g Glob) Exact() bool { return g.exact }
