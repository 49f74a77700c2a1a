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

// TestRoutedLine: MCP messages, responses and blank lines go to mcp-go; the gateway's own
// methods, batches of them and lines that are not JSON go to the pipeline.
func TestRoutedLine(t *testing.T) {
	for _, c := range []struct {
		line   string
		routed bool
	}{
		{`{"jsonrpc":"2.0","method":"initialize","id":1}`, false},
		{`{"jsonrpc":"2.0","method":"tools/call","id":1}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false},
		{`{"jsonrpc":"2.0","method":"server/discover","id":1}`, false},
		{`{"jsonrpc":"2.0","result":{},"id":1}`, false},
		{`  `, false},
		{`[{"jsonrpc":"2.0","method":"nekte.invoke","id":1},{"jsonrpc":"2.0","method":"ping","id":2}]`, false},
		{`{"jsonrpc":"2.0","method":"nekte.invoke","id":1}`, true},
		{`{"jsonrpc":"2.0","method":"nekte.task.cancel","id":1}`, true},
		{`[{"jsonrpc":"2.0","method":"nekte.invoke","id":1},{"jsonrpc":"2.0","method":"calc.add","id":2}]`, true},
		{`{"jsonrpc":"2.0","method":`, true},
		{`hello`, true},
	} {
		if got := routedLine([]byte(c.line)); got != c.routed {
			t.Errorf("%s: routed %v, want %v", c.line, got, c.routed)
		}
		if p := []byte(c.line); len(p) > 20 && p[0] == '{' && routedPrefix(p[:len(p)-1], routedLine) != c.routed && c.line[len(c.line)-1] == '}' {
			t.Errorf("%s cut short: routed %v, want %v", c.line, !c.routed, c.routed)
		}
	}
}
