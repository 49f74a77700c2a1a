package nekte_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	rn "github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/state"
)

// cutKV is a replica's view of the shared store that can be cut off, as when the replica
// dies: then every call fails and nothing is written.
type cutKV struct {
	state.KV
	cut atomic.Bool
}

var errCut = errors.New("replica cut off")

func (k *cutKV) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if k.cut.Load() {
		return nil, false, errCut
	}
	return k.KV.Get(ctx, key)
}

func (k *cutKV) Set(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	if k.cut.Load() {
		return errCut
	}
	return k.KV.Set(ctx, key, v, ttl)
}

func (k *cutKV) SetNX(ctx context.Context, key string, v []byte, ttl time.Duration) (bool, error) {
	if k.cut.Load() {
		return false, errCut
	}
	return k.KV.SetNX(ctx, key, v, ttl)
}

func (k *cutKV) CompareAndSwap(ctx context.Context, key string, old, v []byte, ttl time.Duration) (bool, error) {
	if k.cut.Load() {
		return false, errCut
	}
	return k.KV.CompareAndSwap(ctx, key, old, v, ttl)
}

func (k *cutKV) Delete(ctx context.Context, key string) (bool, error) {
	if k.cut.Load() {
		return false, errCut
	}
	return k.KV.Delete(ctx, key)
}

// Close leaves the shared store to the env.
func (k *cutKV) Close() error { return nil }

// leaseTasks is fastTasks with a lease of 400ms (20 polls).
func leaseTasks() rn.Config {
	cfg := fastTasks()
	cfg.Tasks.Lease = 400 * time.Millisecond
	return cfg
}

// taskStatus is the status field of nekte.task.status through s.
func taskStatus(t *testing.T, s *rn.Service, id string) (status string, checkpoint bool) {
	t.Helper()
	var st struct {
		Status     string `json:"status"`
		Checkpoint bool   `json:"checkpoint_available"`
	}
	if err := json.Unmarshal([]byte(mustCall(t, s, "alice", nekte.MethodTaskStatus, `{"task_id":"`+id+`"}`)), &st); err != nil {
		t.Fatal(err)
	}
	return st.Status, st.Checkpoint
}

// TestLeaseKeepsALiveRunner: a runner that renews its lease is never taken for lost, however
// long the task runs.
func TestLeaseKeepsALiveRunner(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{}`)
	e.capability("wait", b.run)
	a, other := e.service(leaseTasks()), e.service(leaseTasks())
	openStream(t)(call(t, a, "alice", nekte.MethodDelegate, delegate("t-1", "wait", `{}`)))
	waitFor(t, b.started, "the task to start")
	for range 12 { // 12 × 100ms of task time: three leases
		e.clock.Advance(100 * time.Millisecond)
		time.Sleep(60 * time.Millisecond) // 3 polls of the runner's watch
		if st, _ := taskStatus(t, other, "t-1"); st != "running" {
			t.Fatalf("a task whose runner renews its lease is %s", st)
		}
	}
	close(b.release)
}

// TestLeaseLapsedRunnerIsSuspended: a replica running a task is cut off (it died); once its
// lease lapsed, another replica's read suspends the task with a checkpoint, its stream there
// tells why, and the task is resumed and completed there. The lost runner, back, does not
// undo it: it sees its attempt is over and stops.
func TestLeaseLapsedRunnerIsSuspended(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{"n":1}`)
	e.capability("wait", b.run)
	view := &cutKV{KV: e.kv}
	a, err := rn.New(leaseTasks(), rn.Options{KV: view, Catalog: e.catalog, Invoker: e.invoker, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { view.cut.Store(false); _ = a.Close() })
	other := e.service(leaseTasks())

	openStream(t)(call(t, a, "alice", nekte.MethodDelegate, delegate("t-1", "wait", `{}`)))
	waitFor(t, b.started, "the task to start")
	followed := openStream(t)(call(t, other, "alice", rn.MethodTaskStream, `{"task_id":"t-1"}`))
	followed.until(nekte.EventProgress)

	view.cut.Store(true)
	e.clock.Advance(300 * time.Millisecond)
	time.Sleep(60 * time.Millisecond)
	if st, _ := taskStatus(t, other, "t-1"); st != "running" {
		t.Fatalf("suspended before the lease lapsed: %s", st)
	}
	e.clock.Advance(200 * time.Millisecond) // 500ms since the last renewal: lapsed

	evs := followed.until(nekte.EventSuspended)
	if f := frames(evs); !strings.Contains(f, `"reason":"runner lost"`) {
		t.Fatalf("the stream on the other replica:\n%s", f)
	}
	if st, cp := taskStatus(t, other, "t-1"); st != "suspended" || !cp {
		t.Fatalf("status %s, checkpoint %v; want suspended with a checkpoint", st, cp)
	}

	got := mustCall(t, other, "alice", nekte.MethodTaskResume, `{"task_id":"t-1"}`)
	if want := `{"task_id":"t-1","status":"running","previous_status":"suspended"}`; got != want {
		t.Fatalf("resume %s, want %s", got, want)
	}
	waitFor(t, b.started, "the resumed run to start")
	view.cut.Store(false) // the lost runner comes back: its attempt is over
	waitFor(t, b.stopped, "the lost runner's call to stop")
	close(b.release)
	followed.until(nekte.EventComplete)
	if st, _ := taskStatus(t, a, "t-1"); st != "completed" {
		t.Fatalf("status %s, want completed", st)
	}
}

// TestLeaseConfig: tasks.lease is bounded at both edges — at least 4 × poll_interval, so a
// runner renews several times per lease, and at most MaxLease.
func TestLeaseConfig(t *testing.T) {
	const poll = 100 * time.Millisecond
	tests := []struct {
		name  string
		lease time.Duration
		want  string
	}{
		{"default", 0, ""},
		{"4 × poll_interval", 4 * poll, ""},
		{"below 4 × poll_interval", 4*poll - time.Millisecond, "tasks.lease (399ms) must be between 4 × tasks.poll_interval (400ms) and 10m0s"},
		{"maximum", rn.MaxLease, ""},
		{"above the maximum", rn.MaxLease + time.Millisecond, "tasks.lease (10m0.001s) must be between"},
		{"negative", -time.Second, "tasks.lease must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := rn.Config{Tasks: rn.TasksConfig{PollInterval: poll, Lease: tt.lease}}.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate: %v, want %q", err, tt.want)
			}
		})
	}
	if d := (rn.Config{}).WithDefaults().Tasks.Lease; d != rn.DefaultLease {
		t.Fatalf("default lease %v", d)
	}
}
