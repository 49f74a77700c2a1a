package observability

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipMessage(t *testing.T) {
	tests := []struct {
		name, msg string
		limit     int
		want      string
	}{
		{name: "short", msg: "abc", limit: 4, want: "abc"},
		{name: "exact", msg: "abcd", limit: 4, want: "abcd"},
		{name: "ascii cut", msg: "abcdef", limit: 4, want: "abcd"},
		{name: "rune on the limit kept", msg: "abé", limit: 4, want: "abé"},
		{name: "rune across the limit dropped whole", msg: "abcé", limit: 4, want: "abc"},
		{name: "four-byte rune across the limit", msg: "a😀b", limit: 3, want: "a"},
		{name: "long", msg: strings.Repeat("é", 300), limit: 512, want: strings.Repeat("é", 256)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := clipMessage(tt.msg, tt.limit)
			if got != tt.want || !utf8.ValidString(got) || len(got) > tt.limit {
				t.Fatalf("clipMessage(%q, %d) = %q, want %q", tt.msg, tt.limit, got, tt.want)
			}
		})
	}
}
