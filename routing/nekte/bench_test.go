package nekte

import (
	"context"
	"encoding/json"
	"testing"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/state"
)

// BenchmarkProgressWrite measures the hot path of a running task: one progress report
// recorded with one compare-and-swap of its record, and published to a stream.
func BenchmarkProgressWrite(b *testing.B) {
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	defer kv.Close()
	cfg := Config{}.WithDefaults()
	s := &Service{cfg: cfg, tasks: newTaskStore(kv, cfg.Tasks)}
	ctx := context.Background()
	r := &record{ID: "t", Owner: "o", Status: nk.TaskRunning, Attempt: 1, Input: json.RawMessage(`{"q":"some input"}`)}
	if err := s.tasks.create(ctx, r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_, err := s.commit(ctx, "o", "t", func(r *record) error {
			r.Progress = Progress{Processed: i, Total: 1 << 30}
			r.emit(nk.ProgressEvent{Processed: i, Total: 1 << 30, Message: "working"})
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
