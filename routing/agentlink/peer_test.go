package agentlink_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	"google.golang.org/grpc"

	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	"github.com/gatehouse-dev/gatehouse/schemas"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
	"github.com/gatehouse-dev/gatehouse/state"
)

// replica is one hub served on its own listener, with peers over a shared store.
type replica struct {
	hub  *agentlink.Hub
	addr string
	stop func() // stops the listener at once, as a crash would
}

func startReplica(t *testing.T, store state.KV, opts ...grpc.ServerOption) *replica {
	t.Helper()
	return startReplicaCfg(t, store, fastConfig(), opts...)
}

// startReplicaCfg is startReplica with cfg.
func startReplicaCfg(t *testing.T, store state.KV, cfg agentlink.Config, opts ...grpc.ServerOption) *replica {
	t.Helper()
	h, err := agentlink.New(cfg, agentlink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(opts...)
	h.RegisterGRPC(gs, testAuthn)
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(ln) }()
	ds := &dyingStore{KV: store}
	r := &replica{hub: h, addr: ln.Addr().String(), stop: func() { ds.dead.Store(true); gs.Stop() }}
	if err := h.UsePeers(agentlink.Peers{Advertise: r.addr, Store: ds, Client: agentlink.NewGRPCPeerClient(1<<20, nil)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.Close()
		gs.Stop()
		<-done
	})
	return r
}

// dyingStore is the shared store as a replica sees it: once dead (the replica crashed),
// the replica neither refreshes nor removes its entries.
type dyingStore struct {
	state.KV
	dead atomic.Bool
}

var errDead = errors.New("the replica is dead")

func (d *dyingStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if d.dead.Load() {
		return nil, false, errDead
	}
	return d.KV.Get(ctx, key)
}

func (d *dyingStore) CompareAndSwap(ctx context.Context, key string, old, next []byte, ttl time.Duration) (bool, error) {
	if d.dead.Load() {
		return false, errDead
	}
	return d.KV.CompareAndSwap(ctx, key, old, next, ttl)
}

// waitOutcome waits for a dispatch to end.
func waitOutcome(t *testing.T, ch <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("the dispatch did not end")
		return outcome{}
	}
}

// forwarded dispatches task on b until it stops failing with NO_AGENT (a's entry is
// written asynchronously), and returns the first other outcome.
func forwarded(t *testing.T, b *agentlink.Hub, task agentlink.Task) outcome {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		o := waitOutcome(t, dispatchAsync(b, task))
		if o.err == nil || gateway0(o.err) != schemas.CodeNoAgent || time.Now().After(deadline) {
			return o
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPeersForwardToTheReplicaWithTheAgent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(a *testAgent)
		check func(t *testing.T, o outcome)
	}{
		{"result", (*testAgent).serveEcho, func(t *testing.T, o outcome) {
			if o.err != nil || o.o.Agent != "on-a" || string(o.o.Output) != `{"text":"hi"}` {
				t.Fatalf("outcome %+v, %v", o.o, o.err)
			}
		}},
		{"rejection keeps its code and data", func(a *testAgent) {
			go func() {
				for m := range a.in {
					if d := m.GetDispatch(); d != nil {
						a.ack(d.GetTaskId(), false, "no room for it")
					}
				}
			}()
		}, func(t *testing.T, o outcome) {
			data := wantCode(t, o.err, schemas.CodeAgentRejected)
			if data["agent"] != "on-a" || data["reason"] != "no room for it" || data["recovery_hint"] != agentlink.HintTryAnotherAgent {
				t.Fatalf("data %v", data)
			}
		}},
		{"execution failure keeps its diagnostics", func(a *testAgent) {
			go func() {
				for m := range a.in {
					if d := m.GetDispatch(); d != nil {
						a.ack(d.GetTaskId(), true, "")
						a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_FAILED, "", "division by zero")
					}
				}
			}()
		}, func(t *testing.T, o outcome) {
			if data := wantCode(t, o.err, schemas.CodeAgentTaskFailed); data["diagnostics"] != "division by zero" {
				t.Fatalf("data %v", data)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := state.NewEmbedded(state.EmbeddedOptions{})
			t.Cleanup(func() { _ = store.Close() })
			a, b := startReplica(t, store), startReplica(t, store)
			ag := connect(t, a.addr, "", descriptor("on-a"))
			ag.welcome()
			tc.serve(ag)
			waitAgents(t, a.hub, 1)
			tc.check(t, forwarded(t, b.hub, agentlink.Task{Operator: "echo", Input: echoInput("hi")}))
		})
	}
}

func TestPeersInvalidInputIsCheckedByTheServingReplica(t *testing.T) {
	store := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = store.Close() })
	a, b := startReplica(t, store), startReplica(t, store)
	ag := connect(t, a.addr, "", descriptor("on-a"))
	ag.welcome()
	ag.serveEcho()
	waitAgents(t, a.hub, 1)
	o := forwarded(t, b.hub, agentlink.Task{Operator: "echo", Input: []byte(`{"text":7}`)})
	if data := wantCode(t, o.err, schemas.CodeInvalidParams); data["path"] != "/text" {
		t.Fatalf("data %v", data)
	}
}

// TestPeersReplicaGone: the serving replica dies mid-task (AGENT_GONE at once), then its
// entry lapses (NO_AGENT), and a replica that closes drops its entries at once.
func TestPeersReplicaGone(t *testing.T) {
	store := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = store.Close() })
	a, b := startReplica(t, store), startReplica(t, store)
	ag := connect(t, a.addr, "", descriptor("on-a"))
	ag.welcome()
	waitAgents(t, a.hub, 1)
	got := make(chan struct{}, 1)
	go func() {
		for m := range ag.in {
			if d := m.GetDispatch(); d != nil {
				ag.ack(d.GetTaskId(), true, "") // and never a result
				got <- struct{}{}
			}
		}
	}()
	var ch <-chan outcome
	deadline := time.Now().Add(10 * time.Second)
	for ch == nil {
		c := dispatchAsync(b.hub, agentlink.Task{Operator: "echo", Input: echoInput("hi")})
		select {
		case <-got:
			ch = c
		case o := <-c:
			if gateway0(o.err) != schemas.CodeNoAgent || time.Now().After(deadline) {
				t.Fatalf("before the crash: %+v %v", o.o, o.err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	a.stop()
	start := time.Now()
	o := waitOutcome(t, ch)
	data := wantCode(t, o.err, schemas.CodeAgentGone)
	// Either side may tell first: the forwarding replica B, seeing A's stream break (it names
	// the replica), or A itself, whose shutdown ends its agent's connection and answers the
	// forwarded task over the stream before closing it (it names the agent).
	if data["recovery_hint"] != agentlink.HintAgentGone || (data["replica"] != a.addr && data["agent"] != "on-a") {
		t.Fatalf("data %v", data)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("AGENT_GONE %v after the crash", took)
	}
	// Until the entry lapses, calls go to the dead replica and fail at once with AGENT_GONE;
	// then within k intervals (300ms; the slack is for a loaded machine) with NO_AGENT.
	deadline = time.Now().Add(5 * time.Second)
	sawGone := false
	for {
		o = waitOutcome(t, dispatchAsync(b.hub, agentlink.Task{Operator: "echo", Input: echoInput("hi")}))
		if gateway0(o.err) == schemas.CodeNoAgent {
			break
		}
		sawGone = sawGone || gateway0(o.err) == schemas.CodeAgentGone
		if time.Now().After(deadline) {
			t.Fatalf("the dead replica's entry did not lapse: %v", o.err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !sawGone {
		t.Error("no call reached the dead replica before its entry lapsed: the entry was removed, not lapsed")
	}
}

func TestPeersClosingReplicaDropsItsEntries(t *testing.T) {
	store := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = store.Close() })
	a, b := startReplica(t, store), startReplica(t, store)
	ag := connect(t, a.addr, "", descriptor("on-a"))
	ag.welcome()
	ag.serveEcho()
	waitAgents(t, a.hub, 1)
	if o := forwarded(t, b.hub, agentlink.Task{Operator: "echo", Input: echoInput("hi")}); o.err != nil {
		t.Fatal(o.err)
	}
	_ = a.hub.Close()
	// No waiting for the entry to lapse: Close removed it.
	o := waitOutcome(t, dispatchAsync(b.hub, agentlink.Task{Operator: "echo", Input: echoInput("hi")}))
	wantCode(t, o.err, schemas.CodeNoAgent)
}

func TestPeersRefuseAForeignSecret(t *testing.T) {
	store := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = store.Close() })
	a := startReplica(t, store)
	ag := connect(t, a.addr, "", descriptor("on-a"))
	ag.welcome()
	ag.serveEcho()
	waitAgents(t, a.hub, 1)
	c := agentlink.NewGRPCPeerClient(1<<20, nil)
	t.Cleanup(func() { _ = c.Close() })
	_, err := c.DispatchTask(context.Background(), a.addr, forwardRequest([]byte("not the secret")))
	if err == nil || !isPermissionDenied(err) {
		t.Fatalf("err = %v, want PERMISSION_DENIED", err)
	}
}

// TestPeersCarryTheCallersTraceAndDeadline: the forwarded RPC carries the caller's W3C trace
// context and a deadline no later than the caller's.
func TestPeersCarryTheCallersTraceAndDeadline(t *testing.T) {
	store := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = store.Close() })
	type seen struct {
		traceparent string
		deadline    time.Time
	}
	got := make(chan seen, 16)
	see := func(ctx context.Context) {
		md, _ := metadata.FromIncomingContext(ctx)
		dl, _ := ctx.Deadline()
		s := seen{deadline: dl}
		if v := md.Get("traceparent"); len(v) > 0 {
			s.traceparent = v[0]
		}
		got <- s
	}
	captureUnary := grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		see(ctx)
		return next(ctx, req)
	})
	// Forwarded tasks travel over DispatchTaskStream.
	captureStream := grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, next grpc.StreamHandler) error {
		if info.FullMethod == "/gatehouse.v1.AgentPeerService/DispatchTaskStream" {
			see(ss.Context())
		}
		return next(srv, ss)
	})
	a, b := startReplica(t, store, captureUnary, captureStream), startReplica(t, store)
	ag := connect(t, a.addr, "", descriptor("on-a"))
	ag.welcome()
	ag.serveEcho()
	waitAgents(t, a.hub, 1)
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled})
	deadline := time.Now().Add(3 * time.Second)
	ctx, cancel := context.WithDeadline(trace.ContextWithSpanContext(context.Background(), sc), deadline)
	defer cancel()
	for {
		_, err := b.hub.Dispatch(ctx, agentlink.Task{Operator: "echo", Input: echoInput("hi")})
		if err == nil {
			break
		}
		if gateway0(err) != schemas.CodeNoAgent || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s := <-got
	if s.traceparent != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Errorf("traceparent %q, want the caller's", s.traceparent)
	}
	// gRPC sends the time left, so the serving side's deadline may trail by the hop's latency.
	if s.deadline.IsZero() || s.deadline.After(deadline.Add(200*time.Millisecond)) {
		t.Errorf("deadline %v, want one no later than the caller's %v", s.deadline, deadline)
	}
}
