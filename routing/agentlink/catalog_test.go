package agentlink_test

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	"github.com/gatehouse-dev/gatehouse/state"
)

// operatorOf returns h's listing of op, or false.
func operatorOf(h *agentlink.Hub, op string) (agentlink.OperatorInfo, bool) {
	ops, _ := h.Operators()
	for _, o := range ops {
		if o.ID == op {
			return o, true
		}
	}
	return agentlink.OperatorInfo{}, false
}

// waitListing waits until h lists op as check wants it (absent: check gets false).
func waitListing(t *testing.T, h *agentlink.Hub, op string, check func(agentlink.OperatorInfo, bool) bool) agentlink.OperatorInfo {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		o, ok := operatorOf(h, op)
		if check(o, ok) {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: listing %+v (listed %v) never became what the test wants", op, o, ok)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSharedCatalogListsOtherReplicasOperators: an operator of an agent connected to
// replica A is in replica B's catalog (schemas, agent ids, marked remote), once however
// many replicas offer it, B's generation and listeners follow it, and it leaves with the
// agent.
func TestSharedCatalogListsOtherReplicasOperators(t *testing.T) {
	store := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = store.Close() })
	// Nothing here may lapse: the agents answer heartbeats, and the replicas' entries outlive
	// a loaded machine's scheduling delays.
	cfg := steadyConfig()
	a, b, c := startReplicaCfg(t, store, cfg), startReplicaCfg(t, store, cfg), startReplicaCfg(t, store, cfg)
	var changes atomic.Int32
	stop := b.hub.OnChange(func() { changes.Add(1) })
	defer stop()
	gen := b.hub.Generation()

	onA := connect(t, a.addr, "", descriptor("on-a"))
	onA.welcome()
	onA.serveEcho()
	waitAgents(t, a.hub, 1)
	o := waitListing(t, b.hub, "echo", func(_ agentlink.OperatorInfo, ok bool) bool { return ok })
	if !o.Remote || o.Method != "agent.echo" || !slices.Equal(o.Agents, []string{"on-a"}) || o.Description != "Echoes its text." ||
		len(o.Input) == 0 || len(o.Output) == 0 {
		t.Fatalf("B lists %+v", o)
	}
	// The listing is published before the goroutine that changed it tells the listeners.
	if b.hub.Generation() == gen || !eventually(func() bool { return changes.Load() > 0 }) {
		t.Fatalf("B's generation %d (was %d), %d changes told", b.hub.Generation(), gen, changes.Load())
	}

	// Offered by agents on A and C, and on B itself: one listing, every agent named, local.
	onC := connect(t, c.addr, "", descriptor("on-c"))
	onC.welcome()
	onC.serveEcho()
	waitListing(t, b.hub, "echo", func(o agentlink.OperatorInfo, _ bool) bool { return slices.Equal(o.Agents, []string{"on-a", "on-c"}) })
	onB := connect(t, b.addr, "", descriptor("on-b"))
	onB.welcome()
	onB.serveEcho()
	o = waitListing(t, b.hub, "echo", func(o agentlink.OperatorInfo, _ bool) bool { return len(o.Agents) == 3 })
	if o.Remote || !slices.Equal(o.Agents, []string{"on-a", "on-b", "on-c"}) {
		t.Fatalf("B lists %+v", o)
	}
	ops, _ := b.hub.Operators()
	if len(ops) != 1 {
		t.Fatalf("B lists %d operators, want 1: %+v", len(ops), ops)
	}
	onB.close()
	onC.close()

	// The agent on A leaves: the operator leaves B's catalog.
	before := changes.Load()
	onA.close()
	waitListing(t, b.hub, "echo", func(_ agentlink.OperatorInfo, ok bool) bool { return !ok })
	if !eventually(func() bool { return changes.Load() != before }) {
		t.Fatal("B's listeners were not told the operator left")
	}
}

// eventually says whether cond holds within 10s.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// TestSharedCatalogLapsesWithItsReplica: a replica that dies leaves the others' catalogs
// within missed_heartbeats intervals.
func TestSharedCatalogLapsesWithItsReplica(t *testing.T) {
	store := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = store.Close() })
	a, b := startReplica(t, store), startReplica(t, store)
	onA := connect(t, a.addr, "", descriptor("on-a"))
	onA.welcome()
	waitListing(t, b.hub, "echo", func(_ agentlink.OperatorInfo, ok bool) bool { return ok })
	a.stop()
	waitListing(t, b.hub, "echo", func(_ agentlink.OperatorInfo, ok bool) bool { return !ok })
}

// TestSharedCatalogIsBounded: operators past agents.max_shared_catalog_bytes are left out
// of the other replicas' catalogs, and still reached through their method.
func TestSharedCatalogIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bound  int
		listed []string
	}{
		{"roomy", 1 << 20, []string{"echo", "echo2"}},
		{"room for one", 400, []string{"echo"}},
		{"room for none", 40, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := state.NewEmbedded(state.EmbeddedOptions{})
			t.Cleanup(func() { _ = store.Close() })
			cfg := fastConfig()
			cfg.MaxSharedCatalogBytes = tc.bound
			a, b := startReplicaCfg(t, store, cfg), startReplica(t, store)
			echo2 := echoOperator()
			echo2.Id = "echo2"
			onA := connect(t, a.addr, "", descriptor("on-a", echoOperator(), echo2))
			onA.welcome()
			onA.serveEcho()
			waitAgents(t, a.hub, 1)
			// The routing entries are written with the catalog: once the call is forwarded,
			// B has read what A published.
			if o := forwarded(t, b.hub, agentlink.Task{Operator: "echo2", Input: echoInput("hi")}); o.err != nil {
				t.Fatalf("echo2 through B: %v", o.err)
			}
			time.Sleep(3 * fastConfig().HeartbeatInterval)
			ops, _ := b.hub.Operators()
			var listed []string
			for _, o := range ops {
				listed = append(listed, o.ID)
			}
			if !slices.Equal(listed, tc.listed) {
				t.Fatalf("B lists %v, want %v", listed, tc.listed)
			}
		})
	}
}
