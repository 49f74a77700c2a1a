package nekte_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	rn "github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/state"
)

// startFailsKV fails the first n writes that move a task to running, as a Redis restarting
// at that moment does.
type startFailsKV struct {
	state.KV
	n atomic.Int32
}

func (k *startFailsKV) CompareAndSwap(ctx context.Context, key string, old, v []byte, ttl time.Duration) (bool, error) {
	if bytes.Contains(v, []byte(`"status":"running"`)) && k.n.Add(-1) >= 0 {
		return false, errCut
	}
	return k.KV.CompareAndSwap(ctx, key, old, v, ttl)
}

// Close leaves the shared store to the env.
func (k *startFailsKV) Close() error { return nil }

// TestTaskStartSurvivesAStoreBlip: when recording the start of a delegated task fails (the
// state store unavailable for a moment), the task is started again once the store answers,
// and its stream ends with complete — it is not left accepted forever with a stream that
// never ends.
func TestTaskStartSurvivesAStoreBlip(t *testing.T) {
	e := newEnv(t)
	view := &startFailsKV{KV: e.kv}
	view.n.Store(3)
	s, err := rn.New(fastTasks(), rn.Options{KV: view, Catalog: e.catalog, Invoker: e.invoker, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	st := openStream(t)(call(t, s, "alice", nekte.MethodDelegate, delegate("t-1", "echo", `{}`)))
	evs := st.until(nekte.EventComplete)
	if view.n.Load() >= 0 {
		t.Fatalf("the start was refused %d times fewer than planned", view.n.Load()+1)
	}
	t.Logf("completed after 3 failed starts: %d events", len(evs))
}
