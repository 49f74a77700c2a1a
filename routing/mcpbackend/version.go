package mcpbackend

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/gatehouse-dev/gatehouse/codecs/canonical"
)

// SchemaVersion returns the version hash of a tool's contract: the first 16 hex digits
// of the SHA-256 of the canonical JSON (codecs/canonical) of {"inputSchema": input,
// "outputSchema": output}, with the outputSchema member left out when output is empty. In
// JavaScript:
//
//	sha256hex(canonical(JSON.stringify(output ? {inputSchema, outputSchema: output} : {inputSchema}))).slice(0, 16)
func SchemaVersion(input, output []byte) (string, error) {
	doc := make([]byte, 0, len(input)+len(output)+32)
	doc = append(doc, `{"inputSchema":`...)
	if len(input) == 0 {
		doc = append(doc, "null"...)
	} else {
		doc = append(doc, input...)
	}
	if len(output) > 0 {
		doc = append(doc, `,"outputSchema":`...)
		doc = append(doc, output...)
	}
	doc = append(doc, '}')
	return contentVersion(doc)
}

// contentVersion returns the first 16 hex digits of the SHA-256 of doc's canonical form.
func contentVersion(doc []byte) (string, error) {
	c, err := canonical.CanonicalJSON(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:8]), nil
}
