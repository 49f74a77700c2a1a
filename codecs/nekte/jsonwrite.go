package nekte

import (
	"bytes"
	"encoding/json"
)

// marshal encodes v as one line of JSON without escaping '<', '>' and '&' (which cost
// tokens and are not needed outside HTML).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
