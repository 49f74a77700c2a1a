package transcode

import (
	"strconv"
	"unicode/utf8"
)

// PathError reports why a document could not be transcoded and where: Path locates the
// offending value in dot and bracket form (`items[2].name`, `labels["k"]`, `[1]` for a
// positional parameter), with member names as the JSON document spells them, or with
// the fields' JSON names when the wire bytes were at fault. Path is empty for the document
// itself. Reason says what is wrong and never repeats the offending value.
type PathError struct {
	Path   string
	Reason string
}

// Error returns "path: reason", or the reason alone for the document root.
func (e *PathError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// maxPathName is how many bytes of a member name an error path shows.
const maxPathName = 64

// fail returns a PathError with the given reason and an empty path.
func fail(reason string) *PathError { return &PathError{Reason: reason} }

// inField prefixes the path of e with the member name name.
func (e *PathError) inField(name []byte) *PathError {
	if isIdent(name) {
		return e.prefix(string(name))
	}
	return e.prefix(quotedSegment(name))
}

// inIndex prefixes the path of e with the array index i.
func (e *PathError) inIndex(i int) *PathError {
	return e.prefix("[" + strconv.Itoa(i) + "]")
}

// inKey prefixes the path of e with the map key key.
func (e *PathError) inKey(key []byte) *PathError {
	return e.prefix(quotedSegment(key))
}

func (e *PathError) prefix(seg string) *PathError {
	switch {
	case e.Path == "":
		e.Path = seg
	case e.Path[0] == '[':
		e.Path = seg + e.Path
	default:
		e.Path = seg + "." + e.Path
	}
	return e
}

// quotedSegment returns `["name"]`, with name cut to maxPathName bytes.
func quotedSegment(name []byte) string {
	cut := false
	if len(name) > maxPathName {
		name, cut = name[:maxPathName], true
		for len(name) > 0 && !utf8.Valid(name) {
			name = name[:len(name)-1]
		}
	}
	b := append([]byte("["), '"')
	b = appendEscaped(b, name)
	if cut {
		b = append(b, "…"...)
	}
	return string(append(b, '"', ']'))
}

// appendEscaped appends s with the characters JSON must escape escaped and invalid
// UTF-8 replaced.
func appendEscaped(b, s []byte) []byte {
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, `\ufffd`...)
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20:
			b = append(b, `\u00`...)
			b = append(b, hexDigits[r>>4], hexDigits[r&0xF])
		default:
			b = append(b, s[:n]...)
		}
		s = s[n:]
	}
	return b
}

const hexDigits = "0123456789abcdef"

// isIdent reports whether name can stand bare in a path: a short identifier.
func isIdent(name []byte) bool {
	if len(name) == 0 || len(name) > maxPathName {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// typeKey is the member of google.protobuf.Any's JSON form that names the type.
const typeKey = "@type"

// Reasons shared by several paths.
const (
	reasonDepth = "exceeded maximum nesting depth"
	reasonEOF   = "unexpected end of JSON input"
	reasonWire  = "malformed protobuf wire data"
	reasonUTF8  = "invalid UTF-8 in string"
)
