package mcpface

import (
	"strings"
	"testing"
	"time"
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

// TestValidateToolsChangedDelay: absent, zero and positive delays are valid; a negative
// one is refused.
func TestValidateToolsChangedDelay(t *testing.T) {
	tests := []struct {
		delay   time.Duration
		wantErr bool
	}{
		{0, false},
		{time.Millisecond, false},
		{time.Minute, false},
		{-time.Nanosecond, true},
		{-time.Second, true},
	}
	for _, tt := range tests {
		err := Config{ToolsChangedDelay: tt.delay}.ValidateToolsChangedDelay()
		if (err != nil) != tt.wantErr || (err != nil && !strings.Contains(err.Error(), "must not be negative")) {
			t.Errorf("delay %v: %v; want error %v", tt.delay, err, tt.wantErr)
		}
	}
}
