package agentlink_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	"github.com/gatehouse-dev/gatehouse/schemas"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
	"github.com/gatehouse-dev/gatehouse/state"
)

// serveWithProgress answers every dispatch with two progress reports, then its input.
func (a *testAgent) serveWithProgress() {
	go func() {
		for m := range a.in {
			if d := m.GetDispatch(); d != nil {
				a.ack(d.GetTaskId(), true, "")
				for i := 1; i <= 2; i++ {
					a.send(&agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Progress{Progress: &agentlinkv1.TaskProgress{
						TaskId: d.GetTaskId(), Progress: float64(i), Total: 2, Message: "step"}}})
				}
				a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, string(d.GetInputJson()), "")
			}
			if m.GetHeartbeat() != nil {
				a.beat()
			}
		}
	}()
}

// TestPeersForwardProgress: the progress reports of an agent on replica A reach the
// caller of a task forwarded through replica B, before its result.
func TestPeersForwardProgress(t *testing.T) {
	store := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = store.Close() })
	a, b := startReplica(t, store), startReplica(t, store)
	ag := connect(t, a.addr, "", descriptor("on-a"))
	ag.welcome()
	ag.serveWithProgress()
	waitAgents(t, a.hub, 1)

	var mu sync.Mutex
	var got []gateway.Progress
	task := agentlink.Task{Operator: "echo", Input: echoInput("hi"), Progress: func(p gateway.Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}}
	o := forwarded(t, b.hub, task)
	if o.err != nil || o.o.Agent != "on-a" {
		t.Fatalf("outcome %+v, %v", o.o, o.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Progress != 1 || got[1].Progress != 2 || got[1].Total == nil || *got[1].Total != 2 || got[1].Message != "step" {
		t.Fatalf("progress through B: %+v", got)
	}
}

// waitRemoteAgents waits until h lists op with n agents in all.
func waitRemoteAgents(t *testing.T, h *agentlink.Hub, op string, n int) {
	t.Helper()
	waitListing(t, h, op, func(o agentlink.OperatorInfo, ok bool) bool { return ok && len(o.Agents) == n })
}

// TestPeersRedundancyAcrossReplicas: a redundant task's k distinct agents may be spread
// over the replicas: this replica's own first, then the others' in address order; fewer
// than k anywhere is NO_AGENT naming both counts.
func TestPeersRedundancyAcrossReplicas(t *testing.T) {
	store := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = store.Close() })
	// The replicas' entries must not lapse between the listing the test waits for and the
	// dispatches: they outlive a loaded machine's scheduling delays.
	cfg := steadyConfig()
	a, b, c := startReplicaCfg(t, store, cfg), startReplicaCfg(t, store, cfg), startReplicaCfg(t, store, cfg)
	for _, x := range []struct {
		r  *replica
		id string
	}{{a, "a1"}, {c, "c1"}, {c, "c2"}, {b, "b1"}} {
		ag := connect(t, x.r.addr, "", descriptor(x.id))
		ag.welcome()
		ag.serveWithProgress()
	}
	waitRemoteAgents(t, b.hub, "echo", 4)
	waitRemoteAgents(t, a.hub, "echo", 4)

	for _, tc := range []struct {
		name    string
		hub     *agentlink.Hub
		k       int
		local   []string // the first runs, this replica's own agents
		offered int      // NO_AGENT's data.offered; 0: no error
	}{
		{"all local", b.hub, 1, []string{"b1"}, 0},
		{"local then remote", b.hub, 4, []string{"b1"}, 0},
		{"two replicas' agents", a.hub, 3, []string{"a1"}, 0},
		{"too few anywhere", b.hub, 5, nil, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			progress := 0
			task := agentlink.Task{Operator: "echo", Input: echoInput("hi"), Progress: func(gateway.Progress) { mu.Lock(); progress++; mu.Unlock() }}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			runs, err := tc.hub.DispatchRedundant(ctx, task, tc.k)
			if tc.offered > 0 {
				data := wantCode(t, err, schemas.CodeNoAgent)
				if data["offered"] != tc.offered || data["wanted"] != tc.k || data["recovery_hint"] != agentlink.HintWaitForAgent {
					t.Fatalf("data %v", data)
				}
				return
			}
			if err != nil || len(runs) != tc.k {
				t.Fatalf("runs %+v, %v", runs, err)
			}
			if runs[0].Err != nil || runs[0].Outcome == nil {
				t.Fatalf("first run %+v (err %v)", runs[0], runs[0].Err)
			}
			var agents []string
			job := runs[0].Outcome.JobID
			for _, r := range runs {
				if r.Err != nil || r.Outcome == nil || r.Outcome.Agent != r.Agent || string(r.Outcome.Output) != `{"text":"hi"}` || r.Outcome.JobID != job {
					t.Fatalf("run %+v (err %v)", r, r.Err)
				}
				agents = append(agents, r.Agent)
			}
			if !slices.Equal(agents[:len(tc.local)], tc.local) {
				t.Fatalf("agents %v, want %v first", agents, tc.local)
			}
			if distinct := slices.Compact(slices.Sorted(slices.Values(agents))); len(distinct) != tc.k {
				t.Fatalf("agents %v: want %d distinct", agents, tc.k)
			}
			mu.Lock()
			defer mu.Unlock()
			if progress != 2*tc.k {
				t.Fatalf("%d progress reports, want %d", progress, 2*tc.k)
			}
		})
	}
}

// TestPeersRedundantShareFailsAlone: a replica whose agents are busy answers its share of a
// redundant task with OVERLOADED; that run carries it and the other runs stand.
func TestPeersRedundantShareFailsAlone(t *testing.T) {
	store := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = store.Close() })
	a, b, c := startReplica(t, store), startReplica(t, store), startReplica(t, store)
	onA := connect(t, a.addr, "", descriptor("on-a"))
	onA.welcome()
	onA.serveEcho()
	d := descriptor("busy-c")
	d.MaxConcurrentTasks = 1
	busy := connect(t, c.addr, "", d)
	busy.welcome()
	go func() { // beats, never answers a task
		for m := range busy.in {
			if m.GetHeartbeat() != nil {
				busy.beat()
			}
		}
	}()
	waitRemoteAgents(t, b.hub, "echo", 2)
	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan struct{})
	go func() {
		defer close(held)
		_, _ = c.hub.Dispatch(ctx, agentlink.Task{Operator: "echo", Input: echoInput("hold")})
	}()
	defer func() { cancel(); <-held }()
	deadline := time.Now().Add(10 * time.Second)
	for c.hub.Agents()[0].Outstanding != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}

	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	runs, err := b.hub.DispatchRedundant(rctx, agentlink.Task{Operator: "echo", Input: echoInput("hi")}, 2)
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs %+v, %v", runs, err)
	}
	var ok, busyRuns int
	for _, r := range runs {
		switch {
		case r.Err == nil && r.Agent == "on-a":
			ok++
		case gateway0(r.Err) == schemas.CodeOverloaded:
			busyRuns++
		default:
			t.Fatalf("run %+v (err %v)", r, r.Err)
		}
	}
	if ok != 1 || busyRuns != 1 {
		t.Fatalf("runs %+v", runs)
	}
}
