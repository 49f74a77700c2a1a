package nekte

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/gatehouse-dev/gatehouse/codecs/canonical"
)

// Lengths of a version hash in hex digits: the published vectors use 8, newer cores 16.
const (
	HashLen     = 8
	HashLenLong = 16
)

// ErrHashLength is returned by Hash for a length other than 0, HashLen or HashLenLong.
var ErrHashLength = errors.New("nekte: version hash length must be 8 or 16 hex digits")

// Hash returns a capability's version hash h: the first hexLen lowercase hex digits of the
// SHA-256 of the canonical JSON (package canonical) of {"input": input, "output": output}.
// hexLen is HashLen (also when 0) or HashLenLong. An empty schema counts as null.
// Descriptions and examples are not part of the hash, so editing them keeps h.
func Hash(input, output json.RawMessage, hexLen int) (string, error) {
	if hexLen == 0 {
		hexLen = HashLen
	}
	if hexLen != HashLen && hexLen != HashLenLong {
		return "", ErrHashLength
	}
	in, err := canonicalOrNull(input)
	if err != nil {
		return "", err
	}
	out, err := canonicalOrNull(output)
	if err != nil {
		return "", err
	}
	// Canonical JSON of an object is its members' canonical JSON in key order, and
	// "input" sorts before "output".
	doc := make([]byte, 0, len(in)+len(out)+len(`{"input":,"output":}`))
	doc = append(doc, `{"input":`...)
	doc = append(doc, in...)
	doc = append(doc, `,"output":`...)
	doc = append(doc, out...)
	doc = append(doc, '}')
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:hexLen/2]), nil
}

// canonicalOrNull returns the canonical JSON of one value, or null for an empty one.
// Each schema is canonicalised on its own, so that neither can add members beside it.
func canonicalOrNull(v []byte) ([]byte, error) {
	if len(v) == 0 {
		return []byte("null"), nil
	}
	return canonical.CanonicalJSON(v)
}
