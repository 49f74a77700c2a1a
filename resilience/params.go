package resilience

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
)

// errMalformed is returned by cutMember for text that is not the JSON it should be.
var errMalformed = errors.New("malformed JSON")

// cutMember finds the member called name at the top level of the JSON object obj and
// returns its raw value and the object without it (the other members' text kept, joined
// by commas). When obj is not an object (array params) or has no such member, found is
// false and rest is obj. Names are compared after unescaping, as the envelope decoder
// compares them. err is set when obj is not well-formed where it was read, or repeats
// name.
func cutMember(obj []byte, name string) (value, rest []byte, found bool, err error) {
	i := skipWS(obj, 0)
	if i == len(obj) || obj[i] != '{' {
		return nil, obj, false, nil
	}
	var spans [][2]int
	i = skipWS(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return nil, obj, false, nil
	}
	for more := true; more; {
		start := i
		end, ok := skipString(obj, i)
		if !ok {
			return nil, obj, false, errMalformed
		}
		matches := nameIs(obj[start:end], name)
		i = skipWS(obj, end)
		if i == len(obj) || obj[i] != ':' {
			return nil, obj, false, errMalformed
		}
		vstart := skipWS(obj, i+1)
		vend, ok := skipValue(obj, vstart)
		if !ok || (matches && found) {
			return nil, obj, false, errMalformed
		}
		if matches {
			value, found = obj[vstart:vend], true
		} else {
			spans = append(spans, [2]int{start, vend})
		}
		i = skipWS(obj, vend)
		if i == len(obj) || (obj[i] != ',' && obj[i] != '}') {
			return nil, obj, false, errMalformed
		}
		more = obj[i] == ','
		i = skipWS(obj, i+1)
	}
	if i != len(obj) {
		return nil, obj, false, errMalformed
	}
	if !found {
		return nil, obj, false, nil
	}
	rest = make([]byte, 0, len(obj)-len(value))
	rest = append(rest, '{')
	for k, s := range spans {
		if k > 0 {
			rest = append(rest, ',')
		}
		rest = append(rest, obj[s[0]:s[1]]...)
	}
	return value, append(rest, '}'), true, nil
}

// nameIs reports whether the JSON string token tok (quotes included) is name.
func nameIs(tok []byte, name string) bool {
	raw := tok[1 : len(tok)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == name
	}
	var s string
	return json.Unmarshal(tok, &s) == nil && s == name
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the end of the string token starting at b[i].
func skipString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return i, false
}

// scalarEnd are the bytes that end a number or literal.
const scalarEnd = ",:}] \t\n\r\"{["

// skipValue returns the end of the JSON value starting at b[i]. Containers are walked
// without recursion; scalars other than strings run to the next delimiter.
func skipValue(b []byte, i int) (int, bool) {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			end, ok := skipString(b, i)
			if !ok {
				return i, false
			}
			i = end
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i, false
			}
			depth--
			i++
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i, false
			}
			i++
		default:
			start := i
			for i < len(b) && strings.IndexByte(scalarEnd, b[i]) < 0 {
				i++
			}
			if depth == 0 {
				return i, i > start
			}
		}
		if depth == 0 {
			return i, true
		}
	}
	return i, false
}

// paramsDigest is the SHA-256 of params in a canonical form: object members sorted by
// name, no insignificant whitespace, strings re-escaped alike, numbers kept exactly as
// written (so 10000000000000001 and 10000000000000000 differ, and 1 and 1.0 differ too:
// different text is never taken for the same call). Absent params digest as null.
func paramsDigest(params []byte) ([sha256.Size]byte, error) {
	if len(params) == 0 {
		return sha256.Sum256([]byte("null")), nil
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return [sha256.Size]byte{}, err
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(canon), nil
}
