package observability

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxPayloadLogBytes bounds a payload RedactJSON returns.
const MaxPayloadLogBytes = 2048

// Redacted replaces the value of a secret field in a logged payload.
const Redacted = "[REDACTED]"

// secretFields are the field names whose values RedactJSON hides, lowercase with - and _
// removed; a name matches when, so normalised, it equals one or ends with one.
var secretFields = []string{
	"authorization", "token", "accesstoken", "refreshtoken", "idtoken", "bearer",
	"password", "passwd", "passphrase", "secret", "clientsecret", "apikey", "privatekey",
	"cookie", "setcookie", "credential", "credentials", "sessionkey", "signature",
}

// IsSecretField reports whether a field named name holds a secret: authorization, token,
// password, secret, api_key and their kin, in any case, with - or _ anywhere, also as the
// end of a longer name (refresh_token, X-Api-Key, clientSecret).
func IsSecretField(name string) bool {
	n := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(name))
	for _, s := range secretFields {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// RedactJSON returns raw, a JSON payload, for a debug log: the value of every secret field
// (IsSecretField) at any depth replaced by Redacted, the whole at most max bytes (past it,
// cut and marked with "…(truncated)"); max ≤ 0 means MaxPayloadLogBytes. Text that is
// not JSON is not shown, only its size: it cannot be redacted field by field.
func RedactJSON(raw []byte, limit int) string {
	if limit <= 0 {
		limit = MaxPayloadLogBytes
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return "(not JSON, " + strconv.Itoa(len(raw)) + " bytes)"
	}
	out, err := json.Marshal(redact(v))
	if err != nil {
		return "(unprintable, " + strconv.Itoa(len(raw)) + " bytes)"
	}
	return truncate(string(out), limit)
}

// redact returns v with the values of secret fields replaced, at any depth.
func redact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if IsSecretField(k) {
				t[k] = Redacted
				continue
			}
			t[k] = redact(val)
		}
	case []any:
		for i, val := range t {
			t[i] = redact(val)
		}
	}
	return v
}

// truncate cuts s to at most limit bytes on a rune boundary, marking the cut.
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const mark = "…(truncated)"
	cut := max(limit-len(mark), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
