package observability_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/observability"
)

func TestRedactJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", ``, ``},
		{"plain", `{"a":1,"b":"x"}`, `{"a":1,"b":"x"}`},
		{"authorization", `{"Authorization":"Bearer abc"}`, `{"Authorization":"[REDACTED]"}`},
		{"token kinds", `{"token":"t","access_token":"a","refreshToken":"r","id-token":"i"}`,
			`{"access_token":"[REDACTED]","id-token":"[REDACTED]","refreshToken":"[REDACTED]","token":"[REDACTED]"}`},
		{"password and secret", `{"PASSWORD":"p","client_secret":"s","passphrase":"q"}`,
			`{"PASSWORD":"[REDACTED]","client_secret":"[REDACTED]","passphrase":"[REDACTED]"}`},
		{"api keys", `{"api_key":"k","X-Api-Key":"k2","apiKey":"k3"}`,
			`{"X-Api-Key":"[REDACTED]","apiKey":"[REDACTED]","api_key":"[REDACTED]"}`},
		{"nested object", `{"user":{"name":"ann","credentials":{"x":1}}}`, `{"user":{"credentials":"[REDACTED]","name":"ann"}}`},
		{"in arrays", `[{"secret":"s"},{"ok":[{"token":"t"}]}]`, `[{"secret":"[REDACTED]"},{"ok":[{"token":"[REDACTED]"}]}]`},
		{"secret object replaced whole", `{"secret":{"a":"b"}}`, `{"secret":"[REDACTED]"}`},
		{"numbers kept exact", `{"n":12345678901234567890}`, `{"n":12345678901234567890}`},
		{"not JSON", `token=abc`, `(not JSON, 9 bytes)`},
		{"trailing data", `{"a":1} {"token":"t"}`, `(not JSON, 21 bytes)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := observability.RedactJSON([]byte(tt.in), 0); got != tt.want {
				t.Errorf("RedactJSON(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactJSONBounded(t *testing.T) {
	in := `{"text":"` + strings.Repeat("é", 5000) + `"}`
	for _, limit := range []int{0, 40, 13, 1} {
		got := observability.RedactJSON([]byte(in), limit)
		bound := limit
		if bound <= 0 {
			bound = observability.MaxPayloadLogBytes
		}
		if len(got) > bound && len(got) > len("…(truncated)") {
			t.Errorf("limit %d: %d bytes", limit, len(got))
		}
		if !strings.HasSuffix(got, "…(truncated)") || !utf8.ValidString(got) {
			t.Errorf("limit %d: %q", limit, got)
		}
	}
}

func TestIsSecretField(t *testing.T) {
	for name, want := range map[string]bool{
		"authorization": true, "Authorization": true, "token": true, "bearer_token": true, "password": true,
		"db_password": true, "SECRET": true, "api_key": true, "api-key": true, "private_key": true, "cookie": true,
		"name": false, "tokens_used": false, "max_tokens": false, "description": false, "keyword": false,
	} {
		if got := observability.IsSecretField(name); got != want {
			t.Errorf("IsSecretField(%q) = %v, want %v", name, got, want)
		}
	}
}
