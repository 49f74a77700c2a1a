package loader

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/token"
)

// envVar is one variable an interpolation looked up, kept for the document's hash.
type envVar struct {
	value string
	set   bool
}

// varProblem is a problem with a ${...} reference, at byte offset off of the scalar's value.
type varProblem struct {
	off int
	msg string
}

// expand substitutes ${NAME}, ${NAME:-default} and $$ in s. It records every variable it
// looks up in seen and returns the problems it found; the result is meaningless if there are
// any.
func expand(s string, lookup func(string) (string, bool), seen map[string]envVar) (string, []varProblem) {
	var (
		b        strings.Builder
		problems []varProblem
	)
	for i := 0; i < len(s); {
		switch {
		case s[i] != '$':
			b.WriteByte(s[i])
			i++
		case strings.HasPrefix(s[i:], "$$"):
			b.WriteByte('$')
			i += 2
		case !strings.HasPrefix(s[i:], "${"):
			b.WriteByte('$')
			i++
		default:
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				problems = append(problems, varProblem{i, `unterminated "${": missing "}"`})
				return "", problems
			}
			value, problem := substitute(s[i+2:i+end], lookup, seen)
			if problem != "" {
				problems = append(problems, varProblem{i, problem})
			}
			b.WriteString(value)
			i += end + 1
		}
	}
	return b.String(), problems
}

// substitute resolves the expression between "${" and "}".
func substitute(expr string, lookup func(string) (string, bool), seen map[string]envVar) (value, problem string) {
	name, def, hasDefault := strings.Cut(expr, ":-")
	if !validVarName(name) {
		return "", fmt.Sprintf("invalid reference %q: want ${NAME} or ${NAME:-default}", "${"+expr+"}")
	}
	if hasDefault && strings.Contains(def, "${") {
		return "", fmt.Sprintf("invalid reference %q: a default cannot contain \"${\"", "${"+expr+"}")
	}
	value, set := lookup(name)
	seen[name] = envVar{value: value, set: set}
	switch {
	case hasDefault && value == "":
		return def, ""
	case !set:
		return "", fmt.Sprintf("environment variable %s is not set (write ${%s:-default} to give a default)", name, name)
	}
	return value, ""
}

// validVarName reports whether name is a shell-style variable name: [A-Za-z_][A-Za-z0-9_]*.
func validVarName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		letter := c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// plainType returns the YAML type an unquoted substitution result gets: an integer, float or
// boolean when s is in that type's canonical form, so that formatting the typed value gives s
// back exactly; a (double-quoted) string otherwise.
func plainType(s string) token.Type {
	switch s {
	case "true", "false":
		return token.BoolType
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil && strconv.FormatInt(i, 10) == s {
		return token.IntegerType
	}
	if strings.Contains(s, ".") {
		f, err := strconv.ParseFloat(s, 64)
		if err == nil && !math.IsInf(f, 0) && strconv.FormatFloat(f, 'f', -1, 64) == s && fmt.Sprint(f) == s {
			return token.FloatType
		}
	}
	return token.DoubleQuoteType
}
