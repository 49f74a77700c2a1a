package nekte_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	rn "github.com/gatehouse-dev/gatehouse/routing/nekte"
)

// bridgeInvoker runs MCP tool capabilities on a real bridge, as the server's Invoker does
// through the pipeline.
type bridgeInvoker struct{ b *mcpbackend.Bridge }

func (i bridgeInvoker) Invoke(ctx context.Context, c capability.Capability, input json.RawMessage) (*gateway.Result, error) {
	res, err := i.b.CallTool(ctx, c.Method, input)
	if err != nil {
		return nil, err
	}
	return gateway.NewResult(res), nil
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startFixture runs routing/mcpbackend's fixture server over stdio behind a bridge.
func startFixture(t *testing.T) (*mcpbackend.Bridge, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := mcpbackend.Config{
		Name:           "fx",
		Stdio:          &mcpbackend.StdioConfig{Command: fixtureBin, Env: map[string]string{"FIXTURE_NAME": "fx"}, StopGrace: 500 * time.Millisecond},
		ConnectTimeout: 20 * time.Second,
	}
	b, err := mcpbackend.New([]mcpbackend.Config{cfg}, log, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	select {
	case <-b.Loaded():
	case <-time.After(waitLimit):
		t.Fatal("the fixture server did not load")
	}
	return b, logs
}

func TestDelegateOnMCPTool(t *testing.T) {
	b, logs := startFixture(t)
	e := newEnv(t)
	inv := bridgeInvoker{b: b}
	for _, tool := range []string{"progress", "slow"} {
		e.catalog.add(capability.Capability{ID: tool, Kind: capability.KindMCPTool, Method: tool, Source: "fx", Hash: "h-" + tool})
	}
	s, err := newService(e, inv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	t.Run("progress", func(t *testing.T) {
		evs := mustDelegate(t, s, "alice", delegate("t-progress", "progress", `{"steps":3}`))
		var progress []string
		for _, ev := range evs {
			if ev.Event == nekte.EventProgress {
				progress = append(progress, string(ev.Data))
			}
		}
		want := []string{
			`{"processed":1,"total":3,"message":"step 1"}`,
			`{"processed":2,"total":3,"message":"step 2"}`,
			`{"processed":3,"total":3,"message":"step 3"}`,
		}
		if strings.Join(progress, "\n") != strings.Join(want, "\n") {
			t.Fatalf("progress events\n%s\nwant\n%s", strings.Join(progress, "\n"), strings.Join(want, "\n"))
		}
		last := evs[len(evs)-1]
		if last.Event != nekte.EventComplete || !strings.Contains(string(last.Data), `"minimal":"done"`) {
			t.Fatalf("last event %s %s", last.Event, last.Data)
		}
	})

	t.Run("cancel reaches the server", func(t *testing.T) {
		st := openStream(t)(s.Invoke(context.Background(), &gateway.Call{
			Method: nekte.MethodDelegate, Params: []byte(delegate("t-slow", "slow", `{"ms":20000,"tag":"nekte-cancel"}`)),
			Principal: gateway.Principal{Subject: "alice"},
		}))
		st.until(nekte.EventStatusChange) // accepted
		st.until(nekte.EventStatusChange) // running
		time.Sleep(100 * time.Millisecond)
		mustCall(t, s, "alice", nekte.MethodTaskCancel, `{"task_id":"t-slow","reason":"stop"}`)
		if got := names(st.rest()); got != "status_change,cancelled" {
			t.Fatalf("stream after cancel: %s", got)
		}
		deadline := time.Now().Add(waitLimit)
		for !strings.Contains(logs.String(), "cancelled nekte-cancel") {
			if time.Now().After(deadline) {
				t.Fatal("the MCP server never saw the cancellation")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// newService starts a Service on the env with inv as its Invoker; the caller closes it.
func newService(e *env, inv capability.Invoker) (*rn.Service, error) {
	return rn.New(fastTasks(), rn.Options{KV: e.kv, Catalog: e.catalog, Invoker: inv, Now: e.clock.Now})
}
