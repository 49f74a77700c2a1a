package policy

import "testing"

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"demo.echo", "demo.echo", true},
		{"demo.echo", "demo.echoo", false},
		{"demo.*", "demo.", true},
		{"demo.*", "demo.a.b/c", true},
		{"demo.*", "demx.a", false},
		{"*", "", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"é?", "éü", true},
		{"files/delete_*", "files/delete_all", true},
		{"*/read", "files/read", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"~"+tt.s, func(t *testing.T) {
			if got := newGlob(tt.pattern).match(tt.s); got != tt.want {
				t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
			}
		})
	}
}
