package loader

import (
	"maps"
	"slices"
	"testing"

	"github.com/goccy/go-yaml/token"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "alpha", "EMPTY": "", "D": "$B}"}
	lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	tests := []struct {
		in       string
		want     string
		problems []int // byte offsets
		seen     []string
	}{
		{in: "plain", want: "plain"},
		{in: "${A}", want: "alpha", seen: []string{"A"}},
		{in: "x${A}y${A}", want: "xalphayalpha", seen: []string{"A"}},
		{in: "${A:-d}", want: "alpha", seen: []string{"A"}},
		{in: "${EMPTY:-d}", want: "d", seen: []string{"EMPTY"}},
		{in: "${EMPTY}", want: "", seen: []string{"EMPTY"}},
		{in: "${UNSET:-}", want: "", seen: []string{"UNSET"}},
		{in: "${UNSET:-a b: c}", want: "a b: c", seen: []string{"UNSET"}},
		{in: "${D}", want: "$B}", seen: []string{"D"}}, // values are not expanded again
		{in: "$$", want: "$"},
		{in: "$${A}", want: "${A}"},
		{in: "$$$${A}", want: "$${A}"},
		{in: "$$${A}", want: "$alpha", seen: []string{"A"}},
		{in: "$", want: "$"},
		{in: "a$b $5 $", want: "a$b $5 $"},
		{in: "${UNSET}", problems: []int{0}, seen: []string{"UNSET"}},
		{in: "ab${UNSET}cd${A}${NOPE}", problems: []int{2, 16}, seen: []string{"A", "NOPE", "UNSET"}},
		{in: "${}", problems: []int{0}},
		{in: "${1A}", problems: []int{0}},
		{in: "${A-d}", problems: []int{0}},
		{in: "${A:?err}", problems: []int{0}},
		{in: "x ${A", problems: []int{2}},
		{in: "${A:-${B}}", problems: []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			seen := map[string]envVar{}
			got, problems := expand(tt.in, lookup, seen)
			var offsets []int
			for _, p := range problems {
				offsets = append(offsets, p.off)
			}
			if !slices.Equal(offsets, tt.problems) {
				t.Fatalf("problems at %v (%v), want at %v", offsets, problems, tt.problems)
			}
			if len(problems) == 0 && got != tt.want {
				t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if names := slices.Sorted(maps.Keys(seen)); !slices.Equal(names, tt.seen) {
				t.Errorf("looked up %v, want %v", names, tt.seen)
			}
		})
	}
}

func TestPlainType(t *testing.T) {
	tests := map[string]token.Type{
		"8080": token.IntegerType, "-1": token.IntegerType, "0": token.IntegerType,
		"9223372036854775807": token.IntegerType,
		"0.5":                 token.FloatType, "-12.25": token.FloatType,
		"true": token.BoolType, "false": token.BoolType,
		"9223372036854775808":   token.DoubleQuoteType, // beyond int64
		"0755":                  token.DoubleQuoteType,
		"0x1F":                  token.DoubleQuoteType,
		"+5":                    token.DoubleQuoteType,
		"-0":                    token.DoubleQuoteType,
		"1_000":                 token.DoubleQuoteType,
		"1e3":                   token.DoubleQuoteType,
		"1.0":                   token.DoubleQuoteType,
		"0.50":                  token.DoubleQuoteType,
		".5":                    token.DoubleQuoteType,
		"1.2345678901234567890": token.DoubleQuoteType,
		"True":                  token.DoubleQuoteType,
		"yes":                   token.DoubleQuoteType,
		"null":                  token.DoubleQuoteType,
		"~":                     token.DoubleQuoteType,
		"":                      token.DoubleQuoteType,
		" 1":                    token.DoubleQuoteType,
		".inf":                  token.DoubleQuoteType,
		"NaN":                   token.DoubleQuoteType,
		"5s":                    token.DoubleQuoteType,
	}
	for in, want := range tests {
		if got := plainType(in); got != want {
			t.Errorf("plainType(%q) = %v, want %v", in, got, want)
		}
	}
}
