package observability_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/observability"
)

func TestAccessConfigValidate(t *testing.T) {
	for _, r := range []float64{0, 0.5, 1} {
		if err := (observability.LogConfig{Access: observability.AccessConfig{SampleRatio: new(r)}}).Validate(); err != nil {
			t.Errorf("ratio %v: %v", r, err)
		}
	}
	for _, r := range []float64{-0.1, 1.01} {
		if err := (observability.LogConfig{Access: observability.AccessConfig{SampleRatio: new(r)}}).Validate(); err == nil {
			t.Errorf("ratio %v accepted", r)
		}
	}
}

// traceIDs returns n distinct trace ids spread over the id space.
func traceIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = observability.NewTraceID()
	}
	return ids
}

func TestAccessSampling(t *testing.T) {
	ids := traceIDs(4000)
	count := func(a *observability.AccessLog, failed bool) int {
		n := 0
		for _, id := range ids {
			if a.Sampled(id, failed) {
				n++
			}
		}
		return n
	}
	l := slog.New(slog.DiscardHandler)
	tests := []struct {
		name         string
		cfg          observability.AccessConfig
		okLo, okHi   int // successes logged, inclusive bounds
		errorsLogged int
	}{
		{"ratio 0: errors only", observability.AccessConfig{SampleRatio: new(0.0)}, 0, 0, len(ids)},
		{"ratio 1: every call", observability.AccessConfig{SampleRatio: new(1.0)}, len(ids), len(ids), len(ids)},
		{"default 1%", observability.AccessConfig{}, 10, 90, len(ids)},
		{"ratio 0.5", observability.AccessConfig{SampleRatio: new(0.5)}, 1700, 2300, len(ids)},
		{"disabled", observability.AccessConfig{Enabled: new(false), SampleRatio: new(1.0)}, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := observability.NewAccessLog(observability.LogConfig{Access: tt.cfg, DebugPayloads: true}, l)
			if got := count(a, false); got < tt.okLo || got > tt.okHi {
				t.Errorf("successes logged %d, want %d…%d", got, tt.okLo, tt.okHi)
			}
			if got := count(a, true); got != tt.errorsLogged {
				t.Errorf("errors logged %d, want %d", got, tt.errorsLogged)
			}
		})
	}
	// The decision follows the trace id: every replica keeps or drops the same calls.
	cfg := observability.LogConfig{Access: observability.AccessConfig{SampleRatio: new(0.3)}}
	a, replica := observability.NewAccessLog(cfg, l), observability.NewAccessLog(cfg, l)
	for _, id := range ids[:500] {
		if a.Sampled(id, false) != replica.Sampled(id, false) {
			t.Fatalf("trace %s sampled inconsistently", id)
		}
	}
	if observability.NewAccessLog(observability.LogConfig{Access: observability.AccessConfig{Enabled: new(false)}}, l) != nil {
		t.Error("an access log with nothing to log")
	}
	var none *observability.AccessLog
	none.Record(context.Background(), &observability.AccessEntry{Code: -32603}) // no panic
}

func TestAccessRecord(t *testing.T) {
	var buf bytes.Buffer
	l, err := observability.NewLogger(observability.LogConfig{Level: "debug"}, &buf, new(slog.LevelVar))
	if err != nil {
		t.Fatal(err)
	}
	cfg := observability.LogConfig{Access: observability.AccessConfig{SampleRatio: new(0.0)}, DebugPayloads: true}
	a := observability.NewAccessLog(cfg, l)
	ctx := observability.WithLogIDs(context.Background(), observability.LogIDs{TaskID: "t-1"})
	tid := observability.NewTraceID()
	a.Record(ctx, &observability.AccessEntry{Method: "m.ok", Protocol: "grpc", Duration: time.Millisecond, Caller: "bob", TraceID: tid,
		Params: []byte(`{"api_key":"k-123456789"}`), Result: []byte(`{"token":"t-987654321"}`)})
	a.Record(ctx, &observability.AccessEntry{Method: "m.bad", Protocol: "http", Code: -32603, Duration: 2500 * time.Microsecond, Caller: "bob", TraceID: tid})
	var lines []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		lines = append(lines, rec)
	}
	// ratio 0: the success has no access line, only its payload line; the failure has both.
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	want := map[string]any{"msg": "access", "method": "m.bad", "protocol": "http", "status": "error", "code": float64(-32603),
		"duration_ms": 2.5, "caller": observability.CallerHash("bob"), "trace_id": tid, "task_id": "t-1", "level": "INFO"}
	for k, v := range want {
		if lines[1][k] != v {
			t.Errorf("access %s = %v, want %v", k, lines[1][k], v)
		}
	}
	if lines[0]["msg"] != "call payload" || lines[0]["params"] != `{"api_key":"[REDACTED]"}` || lines[0]["result"] != `{"token":"[REDACTED]"}` {
		t.Errorf("payload line: %v", lines[0])
	}
	if s := buf.String(); strings.Contains(s, "k-123456789") || strings.Contains(s, "t-987654321") || strings.Contains(s, `"bob"`) {
		t.Errorf("secrets or the caller's name in the log:\n%s", s)
	}
	if h := observability.CallerHash("bob"); len(h) != 16 || h == observability.CallerHash("bob2") || observability.CallerHash("") != "" {
		t.Errorf("CallerHash: %q", h)
	}
}

func ExampleRedactJSON() {
	fmt.Println(observability.RedactJSON([]byte(`{"user":"ann","auth":{"Password":"hunter2"}}`), 0))
	// Output: {"auth":{"Password":"[REDACTED]"},"user":"ann"}
}
