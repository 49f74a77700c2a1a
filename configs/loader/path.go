package loader

import (
	"strconv"
	"strings"
	"unicode"
)

// Values are indexed by JSON pointer (RFC 6901), the form jsonschema reports instance
// locations in; people see dotted paths such as `routes[2].method` or `headers["x.y"]`.

// pointer joins unescaped reference tokens into a JSON pointer; the root is "".
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}

var tokenEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapeToken(t string) string { return tokenEscaper.Replace(t) }

// childKey returns the dotted path of key inside the mapping at path.
func childKey(path, key string) string {
	if !plainKey(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// childIndex returns the dotted path of item i of the sequence at path.
func childIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// plainKey reports whether key can be written unquoted in a dotted path.
func plainKey(key string) bool {
	if key == "" {
		return false
	}
	for _, r := range key {
		if strings.ContainsRune(`.[]"`, r) || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// parsePath splits a dotted path into reference tokens: "a.b[2]" gives a, b, 2 and
// `a["x.y"]` gives a, x.y. The empty path is the root. ok is false for malformed paths.
func parsePath(path string) (tokens []string, ok bool) {
	tokens = []string{}
	for i := 0; i < len(path); {
		switch path[i] {
		case '[':
			tok, n, ok := parseBracket(path[i:])
			if !ok {
				return nil, false
			}
			tokens = append(tokens, tok)
			i += n
		case '.':
			if i == 0 || i+1 == len(path) || path[i+1] == '.' || path[i+1] == '[' {
				return nil, false
			}
			i++
		default:
			n := strings.IndexAny(path[i:], ".[")
			if n < 0 {
				n = len(path) - i
			}
			tokens = append(tokens, path[i:i+n])
			i += n
		}
	}
	return tokens, true
}

// parseBracket parses `[2]` or `["key"]` at the start of s and returns the token and the
// number of bytes consumed.
func parseBracket(s string) (token string, n int, ok bool) {
	inner := s[1:]
	if strings.HasPrefix(inner, `"`) {
		quoted, err := strconv.QuotedPrefix(inner)
		if err != nil || !strings.HasPrefix(inner[len(quoted):], "]") {
			return "", 0, false
		}
		token, err = strconv.Unquote(quoted)
		return token, 1 + len(quoted) + 1, err == nil
	}
	end := strings.IndexByte(inner, ']')
	if end <= 0 {
		return "", 0, false
	}
	if _, err := strconv.ParseUint(inner[:end], 10, 31); err != nil {
		return "", 0, false
	}
	return inner[:end], 1 + end + 1, true
}
