package agentlink_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu       sync.Mutex
	outcomes []string
	gaps     int
}

func (r *recorder) AgentTaskDone(op, outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes = append(r.outcomes, op+":"+outcome)
}

func (r *recorder) AgentHeartbeatGap(time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gaps++
}

func (r *recorder) seen() ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.outcomes), r.gaps
}

// TestObserverOutcomes: every dispatched task's outcome is reported once, by its kind; the
// gaps between an agent's messages are reported too.
func TestObserverOutcomes(t *testing.T) {
	tests := []struct {
		name   string
		answer func(a *testAgent, d *agentlinkv1.TaskDispatch)
		cancel bool
		want   string
	}{
		{"ok", func(a *testAgent, d *agentlinkv1.TaskDispatch) {
			a.ack(d.GetTaskId(), true, "")
			a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, `{"text":"x"}`, "")
		}, false, "echo:ok"},
		{"rejected", func(a *testAgent, d *agentlinkv1.TaskDispatch) { a.ack(d.GetTaskId(), false, "busy") }, false, "echo:rejected"},
		{"failed", func(a *testAgent, d *agentlinkv1.TaskDispatch) {
			a.ack(d.GetTaskId(), true, "")
			a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_FAILED, "", "boom")
		}, false, "echo:failed"},
		{"gone", func(a *testAgent, _ *agentlinkv1.TaskDispatch) { a.cancel() }, false, "echo:gone"},
		{"cancelled", func(*testAgent, *agentlinkv1.TaskDispatch) {}, true, "echo:cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			h, err := agentlink.New(fastConfig(), agentlink.Options{Observer: rec})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			gs := grpc.NewServer()
			h.RegisterGRPC(gs, testAuthn)
			done := make(chan struct{})
			go func() { defer close(done); _ = gs.Serve(ln) }()
			t.Cleanup(func() { _ = h.Close(); gs.Stop(); <-done })
			a := connect(t, ln.Addr().String(), "", descriptor("obs"))
			a.welcome()
			waitAgents(t, h, 1)
			a.beat()
			deadline := time.Now().Add(10 * time.Second)
			for _, gaps := rec.seen(); gaps < 1; _, gaps = rec.seen() {
				if time.Now().After(deadline) {
					t.Fatal("the agent's heartbeat was not observed as a gap")
				}
				time.Sleep(time.Millisecond)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := make(chan error, 1)
			go func() {
				_, err := h.Dispatch(ctx, agentlink.Task{Operator: "echo", Input: echoInput("x")})
				ch <- err
			}()
			tt.answer(a, a.dispatched())
			if tt.cancel {
				cancel()
			}
			select {
			case <-ch:
			case <-time.After(10 * time.Second):
				t.Fatal("the dispatch did not end")
			}
			if outcomes, _ := rec.seen(); len(outcomes) != 1 || outcomes[0] != tt.want {
				t.Errorf("outcomes %v, want [%s]", outcomes, tt.want)
			}
		})
	}
}
