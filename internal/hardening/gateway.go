package hardening

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Gateway is an in-process gateway serving on loopback ports, stopped when its test ends.
type Gateway struct {
	*server.Server
	// Base is http://host:port of the boundary listener, Admin of the admin listener;
	// Internal is host:port of the internal gRPC listener, empty when it is off.
	Base, Admin, Internal string
	// State is the gateway's state store, owned by the test (Keys counts it).
	State *state.Embedded

	t      testing.TB
	cancel context.CancelFunc
	done   chan error
	logs   *logBuffer
	once   sync.Once
	err    error
}

// Start parses yaml (a whole configuration file), starts a gateway over a fresh embedded
// state store, waits until /readyz answers 200 and stops it when the test ends, logging
// the gateway's output if the test failed.
func Start(t testing.TB, yaml string) *Gateway {
	t.Helper()
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = kv.Close() }) // after the gateway's stop (cleanups run last first)
	return StartState(t, yaml, kv)
}

// StartState is Start over the given state store, which the caller closes (several
// gateways may share one).
func StartState(t testing.TB, yaml string, kv *state.Embedded) *Gateway {
	t.Helper()
	cfg, err := server.Parse("hardening.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	logs := &logBuffer{}
	srv, err := server.New(cfg, server.Options{
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		State:  kv,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &Gateway{Server: srv, Base: "http://" + srv.BoundaryAddr().String(), Admin: "http://" + srv.AdminAddr().String(),
		State: kv, t: t, cancel: cancel, done: make(chan error, 1), logs: logs}
	if a := srv.InternalAddr(); a != nil {
		g.Internal = a.String()
	}
	go func() { g.done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		if err := g.Stop(); err != nil {
			t.Errorf("gateway stopped with %v", err)
		}
		if t.Failed() {
			t.Logf("gateway logs:\n%s", logs.String())
		}
	})
	g.waitReady(15 * time.Second)
	return g
}

// Stop shuts the gateway down (idempotent) and returns Run's result.
func (g *Gateway) Stop() error {
	g.once.Do(func() {
		g.cancel()
		select {
		case g.err = <-g.done:
		case <-time.After(30 * time.Second):
			g.err = io.ErrNoProgress
		}
	})
	return g.err
}

// Logs is what the gateway has logged so far.
func (g *Gateway) Logs() string { return g.logs.String() }

func (g *Gateway) waitReady(within time.Duration) {
	g.t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(g.Admin + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status + " " + string(body)
		} else {
			last = err.Error()
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.t.Fatalf("gateway not ready within %v: %s", within, last)
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
