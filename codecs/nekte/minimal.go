package nekte

import (
	"strings"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
)

// emptyLine is the minimal line of an empty value.
const emptyLine = "(empty)"

// minimalOf returns the minimal line of a JSON value, before capping (package doc, "JSON
// results").
func (r *Rules) minimalOf(n *node) string {
	switch n.kind {
	case 's':
		if n.text == "" {
			return emptyLine
		}
		return n.text
	case 'a':
		if n.total == 0 {
			return "0 items"
		}
		parts := make([]string, len(n.kids))
		for i := range n.kids {
			parts[i] = brief(&n.kids[i])
		}
		return plural(n.total, "item") + ": " + joinMore(parts, n.total)
	case 'o':
		if n.total == 0 {
			return emptyLine
		}
		parts := make([]string, len(n.kids))
		for i := range n.kids {
			parts[i] = n.keys[i] + ": " + brief(&n.kids[i])
		}
		return joinMore(parts, n.total)
	default:
		return n.text
	}
}

// brief is how a value appears inside a minimal line: scalars as text, containers as
// their size.
func brief(n *node) string {
	switch n.kind {
	case 'a':
		return "[" + plural(n.total, "item") + "]"
	case 'o':
		return "{" + plural(n.total, "member") + "}"
	default:
		return n.text
	}
}

// joinMore joins parts with ", ", ending with "…" when total says some were left out.
func joinMore(parts []string, total int) string {
	s := strings.Join(parts, ", ")
	if total > len(parts) {
		s += ", …"
	}
	return s
}

// capLine makes s one line (every run of white space becomes one space; nothing left
// reads "(empty)") and, when its JSON string is more than MinimalTokens, cuts it to the
// longest prefix ending at a token boundary (moved back to a character boundary) whose
// JSON string with "…" appended fits.
func (r *Rules) capLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		s = emptyLine
	}
	limit := r.MinimalTokens
	fits := func(t string) bool { return Tokens(jsonrpc.AppendString(nil, t)) <= limit }
	// Token boundaries of the text say where the cut can fall: a prefix of n tokens is
	// about n tokens once quoted. Only a prefix that could fit is tokenized.
	head := s[:runeStart(s, min(len(s), fitBound(limit)))]
	ends := tokenEnds([]byte(head), limit+1)
	if len(head) == len(s) && len(ends) <= limit && fits(s) {
		return s
	}
	for n := min(len(ends), limit); n > 0; n-- {
		c := strings.TrimRight(s[:runeStart(s, ends[n-1])], " ") + "…"
		if fits(c) {
			return c
		}
	}
	return "…"
}

// runeStart moves i back to the start of the character it falls in.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}
