package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxJSONDepth bounds the nesting of a token's header and claims.
const maxJSONDepth = 16

// Reasons a JSON segment of a token is refused. They name no input.
var (
	errNotObject     = errors.New("segment is not a JSON object")
	errInvalidUTF8   = errors.New("segment is not valid UTF-8")
	errDuplicateName = errors.New("duplicate member name")
	errTooDeep       = errors.New("segment nests too deeply")
	errSyntax        = errors.New("segment is not valid JSON")
)

// decodeObject decodes a token's header or claims: one JSON object, strictly. Unlike
// encoding/json's Unmarshal it refuses a member name that appears twice in one object, at
// any depth (also when spelled with escapes), nesting deeper than maxJSONDepth, and invalid
// UTF-8; numbers stay json.Number. The error never quotes the input.
func decodeObject(data []byte) (map[string]any, error) {
	if !utf8.Valid(data) {
		return nil, errInvalidUTF8
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return nil, errNotObject
		}
		return nil, errSyntax
	}
	if obj == nil {
		return nil, errNotObject // null
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errSyntax // trailing data after the object
	}
	if err := checkNames(data); err != nil {
		return nil, err
	}
	return obj, nil
}

// nameFrame is an open object or array of checkNames.
type nameFrame struct {
	object bool
	n      int                    // names recorded
	names  [maxLinearNames][]byte // the first names, pointing into the input when unescaped
	set    map[string]struct{}    // every name, once there are more than fit in names
}

// maxLinearNames is how many names of one object checkNames compares one by one.
const maxLinearNames = 8

// checkNames walks data, which must be valid JSON, and refuses duplicate member names in
// any object and nesting deeper than maxJSONDepth.
func checkNames(data []byte) error {
	var buf [4]nameFrame
	stack := buf[:0]
	expectName := false
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{', '[':
			if len(stack) == maxJSONDepth {
				return errTooDeep
			}
			stack = append(stack, nameFrame{object: data[i] == '{'})
			expectName = data[i] == '{'
		case '}', ']':
			stack = stack[:len(stack)-1]
			expectName = false
		case ',':
			expectName = stack[len(stack)-1].object
		case '"':
			end := stringEnd(data, i)
			if expectName {
				if err := stack[len(stack)-1].add(data[i : end+1]); err != nil {
					return err
				}
				expectName = false
			}
			i = end
		}
	}
	return nil
}

// stringEnd returns the index of the quote closing the string that opens at data[start].
func stringEnd(data []byte, start int) int {
	for i := start + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(data) - 1
}

// add records a member name, given quoted as in the input, refusing one already recorded.
func (f *nameFrame) add(quoted []byte) error {
	name := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(quoted, '\\') >= 0 {
		var s string
		if err := json.Unmarshal(quoted, &s); err != nil {
			return errSyntax
		}
		name = []byte(s)
	}
	if f.set == nil {
		for _, n := range f.names[:f.n] {
			if bytes.Equal(n, name) {
				return errDuplicateName
			}
		}
		if f.n < maxLinearNames {
			f.names[f.n] = name
			f.n++
			return nil
		}
		f.set = make(map[string]struct{}, 2*maxLinearNames)
		for _, n := range f.names {
			f.set[string(n)] = struct{}{}
		}
	}
	if _, dup := f.set[string(name)]; dup {
		return errDuplicateName
	}
	f.set[string(name)] = struct{}{}
	return nil
}

// foldSet maps the case-folding class (foldKey) of each guarded name to the name.
type foldSet map[string]string

// newFoldSet returns the foldSet of names.
func newFoldSet(names []string) foldSet {
	s := make(foldSet, len(names))
	for _, n := range names {
		s[foldKey(n)] = n
	}
	return s
}

// caseVariant reports whether obj has a member whose name equals a guarded one under
// Unicode case folding without being spelled exactly as it ("Exp" for "exp"), or two members
// equal under case folding. Either smuggles a claim past a decoder that matches names
// case-insensitively (encoding/json's Unmarshal into a struct does).
func caseVariant(obj map[string]any, guarded foldSet) bool {
	seen := make(map[string]struct{}, len(obj))
	for name := range obj {
		folded := foldKey(name)
		if g, ok := guarded[folded]; ok && g != name {
			return true
		}
		if _, dup := seen[folded]; dup {
			return true
		}
		seen[folded] = struct{}{}
	}
	return false
}

// foldKey maps s to a representative of its case-folding class: each rune becomes the lower
// case of the smallest rune of its Unicode simple-folding orbit, so "Sub", "SUB" and "ſub"
// (long s) all become "sub". ASCII names, the usual ones, take a path that allocates nothing
// when they are lower case already.
func foldKey(s string) string {
	ascii := true
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf || s[i] == 'k' || s[i] == 'K' || s[i] == 's' || s[i] == 'S' {
			ascii = false // k and s have non-ASCII fold partners (Kelvin sign, long s)
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(unicode.ToLower(m))
	}
	return b.String()
}
