package nekte

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// jsonNull is the JSON null literal.
const jsonNull = "null"

// marshal encodes v as one line of JSON without HTML escaping, as NEKTE payloads go out
// (codecs/nekte counts tokens of exactly that text).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// mustMarshal is marshal for values of fixed, known-good shapes; on the impossible
// failure it returns null.
func mustMarshal(v any) []byte {
	b, err := marshal(v)
	if err != nil {
		return []byte(jsonNull)
	}
	return b
}

// truncate cuts s to at most n bytes at a character boundary, marking the cut with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
