package loader

import (
	"slices"
	"testing"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		path string
		want []string // nil: malformed
	}{
		{"", []string{}},
		{"a", []string{"a"}},
		{"a.b.c", []string{"a", "b", "c"}},
		{"routes[2].method", []string{"routes", "2", "method"}},
		{"a[0][1]", []string{"a", "0", "1"}},
		{`labels["x.y"]`, []string{"labels", "x.y"}},
		{`labels["a\"b"].c`, []string{"labels", `a"b`, "c"}},
		{`[3]`, []string{"3"}},
		{"a/b~c", []string{"a/b~c"}},
		{".a", nil},
		{"a.", nil},
		{"a..b", nil},
		{"a.[0]", nil},
		{"a[", nil},
		{"a[]", nil},
		{"a[-1]", nil},
		{"a[x]", nil},
		{`a["x]`, nil},
		{`a["x"`, nil},
	}
	for _, tt := range tests {
		got, ok := parsePath(tt.path)
		if ok != (tt.want != nil) || !slices.Equal(got, tt.want) {
			t.Errorf("parsePath(%q) = %q, %v; want %q", tt.path, got, ok, tt.want)
		}
	}
}

// TestPathRoundTrip checks that the paths errors carry parse back to their tokens.
func TestPathRoundTrip(t *testing.T) {
	keys := []string{"a", "x.y", "", "with space", `q"uote`, "[0]", "a/b", "ü", "-", "2"}
	for _, k := range keys {
		path := childIndex(childKey(childKey("", "root"), k), 3)
		got, ok := parsePath(path)
		if want := []string{"root", k, "3"}; !ok || !slices.Equal(got, want) {
			t.Errorf("parsePath(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
}

func TestPointer(t *testing.T) {
	if got, want := pointer([]string{"a/b", "c~d", "0"}), "/a~1b/c~0d/0"; got != want {
		t.Errorf("pointer = %q, want %q", got, want)
	}
	if got := pointer(nil); got != "" {
		t.Errorf("pointer(nil) = %q, want the root", got)
	}
}
