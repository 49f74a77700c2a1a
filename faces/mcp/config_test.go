package mcpface

import (
	"strings"
	"testing"
)

// TestValidateSessionKey: an absent key or one of MinSessionKeyBytes is valid; a shorter
// one is refused with its length.
func TestValidateSessionKey(t *testing.T) {
	tests := []struct {
		name, key, want string
	}{
		{"absent", "", ""},
		{"long enough", strings.Repeat("k", MinSessionKeyBytes), ""},
		{"too short", "short", "the key is 5 bytes long: it must have at least 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Config{SessionKey: tt.key}.ValidateSessionKey()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
