package mcpbackend_test

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestNotSentOnlyWithoutASession: a call in flight when the child dies may have run, so
// its UNAVAILABLE is not marked gateway.ErrNotSent; a call made while no session is live
// was never written anywhere, and is.
func TestNotSentOnlyWithoutASession(t *testing.T) {
	cfg := fixture("fx", nil)
	cfg.Restart = mcpbackend.BackoffConfig{Initial: 2 * time.Second, Max: 2 * time.Second}
	b, _ := start(t, []mcpbackend.Config{cfg})
	pid := pidOf(t, b, "pid")
	inFlight := make(chan error, 1)
	go func() {
		_, err := b.CallTool(context.Background(), "slow", json.RawMessage(`{"ms":30000}`))
		inFlight <- err
	}()
	time.Sleep(200 * time.Millisecond) // let the call reach the child
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-inFlight
	if gateway.AsError(err).Code() != schemas.CodeUnavailable || errors.Is(err, gateway.ErrNotSent) {
		t.Fatalf("the call in flight ended with %v (not sent: %v), want UNAVAILABLE that may have run", err, errors.Is(err, gateway.ErrNotSent))
	}
	waitFor(t, time.Second, "the session to be gone", func() bool { return b.Status()[0].Live == 0 })
	_, err = b.CallTool(ctxTimeout(t, time.Second), "echo", json.RawMessage(`{"message":"x"}`))
	if gateway.AsError(err).Code() != schemas.CodeUnavailable || !errors.Is(err, gateway.ErrNotSent) {
		t.Fatalf("a call without a live session ended with %v, want UNAVAILABLE marked not sent", err)
	}
}
