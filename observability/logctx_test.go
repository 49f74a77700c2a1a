package observability_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/observability"
)

// logOne logs one record with ctx through a JSON logger of NewLogger and returns it decoded.
func logOne(t *testing.T, ctx context.Context, args ...any) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	l, err := observability.NewLogger(observability.LogConfig{}, &buf, new(slog.LevelVar))
	if err != nil {
		t.Fatal(err)
	}
	l.InfoContext(ctx, "hello", args...)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	if n := strings.Count(buf.String(), `"trace_id"`); n > 1 {
		t.Errorf("trace_id %d times: %s", n, buf.String())
	}
	return rec
}

func TestContextHandlerAddsIDs(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	span := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	withSpan := trace.ContextWithSpanContext(context.Background(), span)
	ids := observability.LogIDs{TraceID: "11111111111111111111111111111111", TaskID: "task-7", AgentID: "agent-3"}
	tests := []struct {
		name string
		ctx  context.Context
		args []any
		want map[string]string // "" means absent
	}{
		{"no ids", context.Background(), nil,
			map[string]string{"trace_id": "", "span_id": "", "task_id": "", "agent_id": ""}},
		{"span", withSpan, nil,
			map[string]string{"trace_id": tid.String(), "span_id": sid.String(), "task_id": ""}},
		{"ids without span", observability.WithLogIDs(context.Background(), ids), nil,
			map[string]string{"trace_id": ids.TraceID, "span_id": "", "task_id": "task-7", "agent_id": "agent-3"}},
		{"span wins over the call's trace id", observability.WithLogIDs(withSpan, ids), nil,
			map[string]string{"trace_id": tid.String(), "span_id": sid.String(), "task_id": "task-7"}},
		{"record's own trace_id kept", observability.WithLogIDs(context.Background(), ids), []any{"trace_id", "mine"},
			map[string]string{"trace_id": "mine", "task_id": "task-7"}},
		{"nested ids merge", observability.WithLogIDs(observability.WithLogIDs(context.Background(), ids), observability.LogIDs{TaskID: "task-8"}), nil,
			map[string]string{"trace_id": ids.TraceID, "task_id": "task-8", "agent_id": "agent-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := logOne(t, tt.ctx, tt.args...)
			for k, want := range tt.want {
				got, _ := rec[k].(string)
				if got != want {
					t.Errorf("%s = %q, want %q (record %v)", k, got, want, rec)
				}
			}
		})
	}
}

func TestContextHandlerWithoutContext(t *testing.T) {
	var buf bytes.Buffer
	h := observability.NewContextHandler(slog.NewJSONHandler(&buf, nil))
	l := slog.New(h).With("component", "x").WithGroup("g")
	l.Info("plain", "k", "v") // no context: nothing added
	if s := buf.String(); strings.Contains(s, "trace_id") || !strings.Contains(s, `"component":"x"`) || !strings.Contains(s, `"g":{"k":"v"}`) {
		t.Errorf("record: %s", s)
	}
	if !h.Enabled(context.Background(), slog.LevelInfo) || h.Enabled(context.Background(), slog.LevelDebug) {
		t.Error("Enabled does not follow the wrapped handler")
	}
}
