package agentlink

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// TestProgressBufferAtItsEdge: agents.forwarded_progress_buffer reports wait, in order;
// one more is dropped at once, never waited for.
func TestProgressBufferAtItsEdge(t *testing.T) {
	const n = 3
	ch, report := progressBuffer(n)
	total := 10.0
	for i := range n + 1 {
		report(gateway.Progress{Progress: float64(i), Total: &total, Message: "step"})
	}
	if len(ch) != n {
		t.Fatalf("%d reports queued, want %d", len(ch), n)
	}
	for i := range n {
		p := <-ch
		if p.GetProgress() != float64(i) || !p.GetHasTotal() || p.GetTotal() != total || p.GetMessage() != "step" {
			t.Fatalf("report %d: %v", i, p)
		}
	}
	report(gateway.Progress{Progress: 7})
	if p := <-ch; p.GetProgress() != 7 || p.GetHasTotal() {
		t.Fatalf("after draining, a report without a total: %v", p)
	}
}
