package state

import (
	"math"
	"strconv"
	"testing"
)

// FuzzParseInt checks parseInt against its definition: s is accepted iff it is
// strconv.FormatInt of the int64 it denotes.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "01", "+1", "42", "-42", "", "-", " 1",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"99999999999999999999", "18446744073709551616", "1e3"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseInt(b)
		want, err := strconv.ParseInt(string(b), 10, 64)
		wantOK := err == nil && strconv.FormatInt(want, 10) == string(b)
		if ok != wantOK || (ok && got != want) {
			t.Errorf("parseInt(%q) = %d, %v; want %d, %v", b, got, ok, want, wantOK)
		}
	})
}

func TestAddInt(t *testing.T) {
	tests := []struct {
		a, b, want int64
		ok         bool
	}{
		{1, 2, 3, true},
		{math.MaxInt64, 0, math.MaxInt64, true},
		{math.MaxInt64, 1, 0, false},
		{math.MaxInt64 - 1, 1, math.MaxInt64, true},
		{math.MinInt64, -1, 0, false},
		{math.MinInt64, 1, math.MinInt64 + 1, true},
		{math.MinInt64, math.MaxInt64, -1, true},
		{-1, math.MinInt64, 0, false},
		{0, math.MinInt64, math.MinInt64, true},
	}
	for _, tt := range tests {
		got, ok := addInt(tt.a, tt.b)
		if got != tt.want || ok != tt.ok {
			t.Errorf("addInt(%d, %d) = %d, %v; want %d, %v", tt.a, tt.b, got, ok, tt.want, tt.ok)
		}
	}
}
