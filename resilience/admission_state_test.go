package resilience_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
)

// TestAdmissionControlState checks the read-only views the metrics scrape: a backend's
// queue depth while a call waits for its turn, the global limit, and the wait each
// admitted call is reported with.
func TestAdmissionControlState(t *testing.T) {
	var mu sync.Mutex
	waits := map[string]int{}
	cfg := &resilience.AdmissionConfig{
		Global:  resilience.AdaptiveConfig{InitialLimit: 7, MinLimit: 7, MaxLimit: 7},
		Default: resilience.TargetLimits{MaxConcurrency: 1, Queue: 4, Throttle: time.Millisecond, MaxWait: 5 * time.Second},
	}
	ac := resilience.NewAdmission(cfg, resilience.AdmissionDeps{Now: time.Now, OnWait: func(backend string, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if d >= 0 {
			waits[backend]++
		}
	}})
	if limit, ok := ac.Limit(); !ok || limit != 7 {
		t.Fatalf("Limit() = %d, %v; want 7, true", limit, ok)
	}
	h := gateway.Chain(func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
		return call.Target.Invoke(ctx, call)
	}, ac.Middleware())
	tgt := &admTarget{name: "t", unblock: make(chan struct{}), entered: make(chan struct{}, 2)}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { _, _ = h(context.Background(), admCall("block", tgt, gateway.ZoneExternal)) })
	}
	<-tgt.entered // one runs; the other waits for its turn
	deadline := time.Now().Add(5 * time.Second)
	for ac.QueueDepths()["t"] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("QueueDepths() = %v, want t: 1", ac.QueueDepths())
		}
		time.Sleep(time.Millisecond)
	}
	close(tgt.unblock)
	wg.Wait()
	if got := ac.QueueDepths()["t"]; got != 0 {
		t.Errorf("queue depth after both ran = %d, want 0", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if waits["t"] != 2 {
		t.Errorf("waits reported %v, want 2 for t", waits)
	}
	if resilience.NewAdmission(nil, resilience.AdmissionDeps{Now: time.Now}).Middleware() != nil {
		t.Error("a nil section made an admission stage")
	}
}
