package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	a2av1 "github.com/gatehouse-dev/gatehouse/schemas/gen/lf/a2a/v1"
)

// TestA2AGRPCStreamResets: on the A2A gRPC binding (lf.a2a.v1.A2AService, internal
// listener), clients reset SendStreamingMessage and SubscribeToTask streams mid-way
// (RST_STREAM by cancelling) or read them to the end. Model: a stream's states never move
// back or out of an end, a reset ends the call with Canceled and leaves the task alone —
// it is NEKTE's, not the request's — so every task still ends as its input says
// (completed, or failed for a bad input). A reload runs all the while.
func TestA2AGRPCStreamResets(t *testing.T) {
	cfg := strings.Replace(a2aConfig, "  admin: {addr: \"127.0.0.1:0\"}\n", "  admin: {addr: \"127.0.0.1:0\"}\n  internal: {addr: \"127.0.0.1:0\"}\n", 1)
	g := hardening.Start(t, cfg)
	cc, err := grpc.NewClient(g.Internal, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cc.Close() }()
	c := a2av1.NewA2AServiceClient(cc)
	alice := token(t, "alice")
	as := func() (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+alice), cancel
	}
	send := func(good bool) *a2av1.SendMessageRequest {
		in := map[string]any{"minuend": 5, "subtrahend": 3}
		if !good {
			in["minuend"] = "five"
		}
		v, _ := structpb.NewValue(in)
		md, _ := structpb.NewStruct(map[string]any{"skill": "subtract"})
		return &a2av1.SendMessageRequest{Message: &a2av1.Message{MessageId: "m", Role: a2av1.Role_ROLE_USER, Metadata: md,
			Parts: []*a2av1.Part{{Content: &a2av1.Part_Data{Data: v}}}}}
	}
	ctx, cancel := as()
	if _, err := c.SendMessage(ctx, send(true)); err != nil {
		t.Fatalf("warm-up: %v", err)
	}
	cancel()
	base := hardening.Take(func() int { return g.State.Len() })
	t.Log(base)

	r, h := seeded(t)
	var tally counts
	runs := hardening.Iterations(t, 3)
	for run := range runs {
		stop := reloader(t, g, cfg)
		seeds := []uint64{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}
		var wg sync.WaitGroup
		for w, seed := range seeds {
			wg.Go(func() {
				wr := rand.New(rand.NewPCG(seed, uint64(w)))
				for range 4 {
					if err := a2aGRPCOp(wr, c, as, send, h, &tally); err != nil {
						t.Errorf("run %d: %v\n%s", run, err, h)
						return
					}
				}
			})
		}
		wg.Wait()
		reloads := stop()
		if t.Failed() {
			return
		}
		t.Logf("run %d: %d reloads", run, reloads)
		base.Check(t, a2aTaskTTL+15*time.Second, hardening.Slack{Goroutines: 4, FDs: 4})
	}
	t.Logf("outcomes over %d runs: %s", runs, tally.String())
}

var a2aGRPCStates = map[a2av1.TaskState]state{
	a2av1.TaskState_TASK_STATE_SUBMITTED: accepted, a2av1.TaskState_TASK_STATE_WORKING: running,
	a2av1.TaskState_TASK_STATE_COMPLETED: completed, a2av1.TaskState_TASK_STATE_FAILED: failed,
	a2av1.TaskState_TASK_STATE_CANCELED: cancelled,
}

// readA2AStream reads a stream's states until its end, or until reset after k states
// (k 0: to the end). It returns the task id, the states seen and how the stream ended.
func readA2AStream(st grpc.ServerStreamingClient[a2av1.StreamResponse], k int, reset context.CancelFunc) (string, []state, error) {
	var id string
	var seen []state
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return id, seen, nil
		}
		if err != nil {
			return id, seen, err
		}
		var s a2av1.TaskState
		switch {
		case m.GetTask() != nil:
			id, s = m.GetTask().GetId(), m.GetTask().GetStatus().GetState()
		case m.GetStatusUpdate() != nil:
			id, s = m.GetStatusUpdate().GetTaskId(), m.GetStatusUpdate().GetStatus().GetState()
		default:
			continue // an artifact
		}
		x, ok := a2aGRPCStates[s]
		if !ok {
			return id, seen, fmt.Errorf("state %v", s)
		}
		if n := len(seen); n > 0 && ((seen[n-1].terminal() && x != seen[n-1]) || (seen[n-1] != accepted && x == accepted)) {
			return id, seen, fmt.Errorf("the stream moved %s → %s", seen[n-1], x)
		}
		seen = append(seen, x)
		if k > 0 && len(seen) == k {
			reset()
		}
	}
}

func a2aGRPCOp(r *rand.Rand, c a2av1.A2AServiceClient, as func() (context.Context, context.CancelFunc),
	send func(bool) *a2av1.SendMessageRequest, h *history, tally *counts) error {
	good := r.IntN(4) > 0
	ends := map[bool]state{true: completed, false: failed}[good]
	k := r.IntN(3) // 0: read to the end; else reset after k states
	ctx, cancel := as()
	defer cancel()
	st, err := c.SendStreamingMessage(ctx, send(good))
	if err != nil {
		return err
	}
	id, seen, err := readA2AStream(st, k, cancel)
	desc := fmt.Sprintf("%s stream (reset after %d) → %v %v", id, k, seen, status.Code(err))
	h.addf("%s", desc)
	tally.inc(fmt.Sprintf("send k=%d %v", k, status.Code(err)))
	switch {
	case err == nil && len(seen) > 0 && seen[len(seen)-1] == ends:
	case k > 0 && len(seen) >= k && status.Code(err) == codes.Canceled:
	default:
		return fmt.Errorf("%s: want the stream to end %s, or Canceled after the reset", desc, ends)
	}
	if id == "" {
		return fmt.Errorf("%s: no task id", desc)
	}
	if r.IntN(2) == 0 { // a subscription, reset after its first state or read to the end
		sctx, scancel := as()
		sub, err := c.SubscribeToTask(sctx, &a2av1.SubscribeToTaskRequest{Id: id})
		if err == nil {
			var sseen []state
			_, sseen, err = readA2AStream(sub, r.IntN(2), scancel)
			h.addf("%s subscribe → %v %v", id, sseen, status.Code(err))
			// Canceled: our reset; FailedPrecondition: UnsupportedOperation, the task had ended
			if err != nil && status.Code(err) != codes.Canceled && status.Code(err) != codes.FailedPrecondition {
				scancel()
				return fmt.Errorf("%s subscribe: %w", id, err)
			}
		}
		scancel()
		tally.inc(fmt.Sprintf("subscribe %v", status.Code(err)))
	}
	// The task runs on: it ends as its input says.
	deadline := time.Now().Add(20 * time.Second)
	for {
		gctx, gcancel := as()
		task, err := c.GetTask(gctx, &a2av1.GetTaskRequest{Id: id})
		gcancel()
		if err != nil {
			return fmt.Errorf("%s GetTask: %w", id, err)
		}
		s := a2aGRPCStates[task.GetStatus().GetState()]
		if s.terminal() {
			h.addf("%s ended %s", id, s)
			tally.inc("ended " + string(s))
			if s != ends {
				return fmt.Errorf("%s ended %s after a client's reset; want %s", id, s, ends)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still %s after 20s", id, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
