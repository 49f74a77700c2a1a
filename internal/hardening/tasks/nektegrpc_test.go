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

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	nektev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/nekte/v1"
)

// TestNekteGRPCDelegateResets: on the NEKTE gRPC binding (internal listener), delegate
// streams are read to the end or reset by the client (RST_STREAM by cancelling) after 1–2
// events. Model: a reset call ends Canceled and does not cancel the task — a caller that
// disconnects does not (docs/nekte-tasks.md) — so every task still ends completed, and
// TaskStatus of another subject is NOT_FOUND. A reload runs all the while.
func TestNekteGRPCDelegateResets(t *testing.T) {
	cfg := strings.Replace(nekteConfig, "  admin: {addr: \"127.0.0.1:0\"}\n", "  admin: {addr: \"127.0.0.1:0\"}\n  internal: {addr: \"127.0.0.1:0\"}\n", 1)
	g := hardening.Start(t, cfg)
	cc, err := grpc.NewClient(g.Internal, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cc.Close() }()
	c := nektev1.NewNekteClient(cc)
	alice, bob := token(t, "alice"), token(t, "bob")
	as := func(tok string) (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok), cancel
	}
	if err := nekteGRPCTask(c, as, alice, bob, "warm", 0); err != nil {
		t.Fatalf("warm-up: %v", err)
	}
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
				for n := range 4 {
					k := wr.IntN(3)
					id := fmt.Sprintf("g%d-w%d-%d", run, w, n)
					err := nekteGRPCTask(c, as, alice, bob, id, k)
					h.addf("%s delegate, reset after %d events → %v", id, k, err)
					tally.inc(fmt.Sprintf("reset after %d", k))
					if err != nil {
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
		base.Check(t, nekteRecordTTL+15*time.Second, hardening.Slack{Goroutines: 4, FDs: 4})
	}
	t.Logf("outcomes over %d runs: %s", runs, tally.String())
}

// nekteGRPCTask delegates get_data (by its description) as task id, reads k events and
// resets the stream (k 0: reads it to the end), then waits for the task to end.
func nekteGRPCTask(c nektev1.NekteClient, as func(string) (context.Context, context.CancelFunc), alice, bob, id string, k int) error {
	ctx, cancel := as(alice)
	defer cancel()
	st, err := c.Delegate(ctx, &nektev1.DelegateRequest{Task: &nektev1.Task{Id: id, Desc: "get_data: takes no params and returns the fixed list hello 5"}})
	if err != nil {
		return err
	}
	n := 0
	for {
		_, err = st.Recv()
		if err != nil {
			break
		}
		n++
		if k > 0 && n == k {
			cancel()
		}
	}
	switch {
	case errors.Is(err, io.EOF) && (k == 0 || n < k):
	case k > 0 && n >= k && status.Code(err) == codes.Canceled:
	default:
		return fmt.Errorf("%s: the stream ended after %d events (reset after %d): %w", id, n, k, err)
	}
	bctx, bcancel := as(bob)
	_, err = c.TaskStatus(bctx, &nektev1.TaskStatusRequest{TaskId: id})
	bcancel()
	if status.Code(err) != codes.NotFound {
		return fmt.Errorf("%s: another subject's TaskStatus, want NotFound: %w", id, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		sctx, scancel := as(alice)
		resp, err := c.TaskStatus(sctx, &nektev1.TaskStatusRequest{TaskId: id})
		scancel()
		if err != nil {
			return fmt.Errorf("%s TaskStatus: %w", id, err)
		}
		switch s := state(resp.GetStatus()); {
		case s == completed:
			return nil
		case s.terminal():
			return fmt.Errorf("%s ended %s after its caller's reset; want completed", id, s)
		case time.Now().After(deadline):
			return fmt.Errorf("%s still %s after 20s", id, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
