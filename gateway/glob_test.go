package gateway_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

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
		{"calc.add", "calc.add", true},
		{"calc.add", "calc.ad", false},
		{"calc.*", "calc.", true},
		{"calc.*", "calc.add.more", true},
		{"calc.*", "calc", false},
		{"*.add", "calc.add", true},
		{"*.add", "calc.sub", false},
		{"c?lc", "calc", true},
		{"c?lc", "clc", false},
		{"c?lc", "cälc", true}, // ? is one rune
		{"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyyb", false},
		{"**", "x", true},
		{"é*", "éa", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"~"+tt.s, func(t *testing.T) {
			if got := gateway.NewGlob(tt.pattern).Match(tt.s); got != tt.want {
				t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
			}
		})
	}
	if g := gateway.NewGlob("c?l*"); g.Literal() != 2 || g.Exact() || g.Pattern() != "c?l*" {
		t.Errorf("c?l*: literal %d exact %v", g.Literal(), g.Exact())
	}
	if g := gateway.NewGlob("calc.add"); g.Literal() != 8 || !g.Exact() {
		t.Errorf("calc.add: literal %d exact %v", g.Literal(), g.Exact())
	}
}

func TestGlobMatchDoesNotAllocate(t *testing.T) {
	g := gateway.NewGlob("*a*b?c")
	if n := testing.AllocsPerRun(100, func() { g.Match("xxaxxbycxxaxxbzc") }); n != 0 {
		t.Fatalf("%v allocations per match", n)
	}
}
