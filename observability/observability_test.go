package observability_test

import (
	"bytes"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/observability"
)

func TestNewTraceID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := observability.NewTraceID()
		if !re.MatchString(id) || id == strings.Repeat("0", 32) {
			t.Fatalf("invalid trace id %q", id)
		}
		if seen[id] {
			t.Fatalf("trace id %q repeated", id)
		}
		seen[id] = true
	}
}

func TestNewLogger(t *testing.T) {
	tests := []struct {
		cfg     observability.LogConfig
		ok      bool
		debugOn bool
		json    bool
	}{
		{observability.LogConfig{}, true, false, true},
		{observability.LogConfig{Level: "debug", Format: "text"}, true, true, false},
		{observability.LogConfig{Level: "warn", Format: "json"}, true, false, true},
		{observability.LogConfig{Level: "loud"}, false, false, false},
		{observability.LogConfig{Format: "xml"}, false, false, false},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		level := new(slog.LevelVar)
		l, err := observability.NewLogger(tt.cfg, &buf, level)
		if (err == nil) != tt.ok {
			t.Errorf("%+v: err %v", tt.cfg, err)
			continue
		}
		if !tt.ok {
			continue
		}
		l.Debug("d")
		if got := strings.Contains(buf.String(), `d`); got != tt.debugOn {
			t.Errorf("%+v: debug logged = %v", tt.cfg, got)
		}
		buf.Reset()
		l.Error("e")
		if got := strings.HasPrefix(buf.String(), "{"); got != tt.json {
			t.Errorf("%+v: json = %v (%q)", tt.cfg, got, buf.String())
		}
		level.Set(slog.LevelDebug) // a reload lowers the level of the same logger
		buf.Reset()
		l.Debug("after")
		if !strings.Contains(buf.String(), "after") {
			t.Errorf("%+v: level change not applied", tt.cfg)
		}
	}
}
