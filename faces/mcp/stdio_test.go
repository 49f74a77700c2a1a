package mcpface

import (
	"context"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

func TestCallerZone(t *testing.T) {
	if z := callerZone(context.Background()); z != gateway.ZoneExternal {
		t.Errorf("default zone %v", z)
	}
	if z := callerZone(context.WithValue(context.Background(), zoneKey{}, gateway.ZoneLocal)); z != gateway.ZoneLocal {
		t.Errorf("stdio zone %v", z)
	}
}

// TestLineSplitter: lines are cut wherever the chunks end, and a line over the limit is
// skipped whole.
func TestLineSplitter(t *testing.T) {
	for _, tt := range []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"whole lines", []string{"a\nbb\n"}, []string{"a", "bb"}},
		{"split lines", []string{"a", "b\nc", "c\n", "\n"}, []string{"ab", "cc", ""}},
		{"unterminated", []string{"a\nbb"}, []string{"a"}},
		{"over the limit", []string{"12345", "6\nok\n", "1234567890\n"}, []string{"ok"}},
		{"at the limit", []string{"12345\n"}, []string{"12345"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var l lineSplitter
			var got []string
			for _, c := range tt.chunks {
				l.feed([]byte(c), 5, func(b []byte) { got = append(got, string(b)) })
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
