package capability_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/mcptest"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// fixtureBin is routing/mcpbackend's mcp-go fixture server, built once by TestMain.
var fixtureBin string

func TestMain(m *testing.M) { mcptest.Main(m, "../mcpbackend/testdata/fixture", &fixtureBin) }

// npmServer returns the path of an installed npm MCP server (make mcp-servers).
func npmServer(t testing.TB, bin string) string { return mcptest.NPMServer(t, bin) }

// fast is upstream supervision tuned for tests.
func fast(c mcpbackend.Config) mcpbackend.Config {
	c.Heartbeat = mcpbackend.HeartbeatConfig{Interval: 600 * time.Millisecond, Timeout: 200 * time.Millisecond}
	c.Restart = mcpbackend.BackoffConfig{Initial: 50 * time.Millisecond, Max: 400 * time.Millisecond, Jitter: 0.2}
	c.ConnectTimeout = 20 * time.Second
	if c.Stdio != nil {
		c.Stdio.StopGrace = 500 * time.Millisecond
	}
	return c
}

// startBridge runs a bridge over cfgs, waits for its catalogs and returns its target.
func startBridge(t testing.TB, cfgs ...mcpbackend.Config) *mcpbackend.Target {
	t.Helper()
	b, err := mcpbackend.New(cfgs, slog.New(slog.DiscardHandler), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	select {
	case <-b.Loaded():
	case <-time.After(30 * time.Second):
		t.Fatalf("catalogs not loaded: %v", b.Ready(context.Background()))
	}
	return b.Target("mcp.")
}

// targetInvoker runs capabilities on a target, as the server's pipeline ends.
type targetInvoker struct{ t gateway.Target }

func (i targetInvoker) Invoke(ctx context.Context, c capability.Capability, in json.RawMessage) (*gateway.Result, error) {
	return i.t.Invoke(ctx, &gateway.Call{Method: c.Method, Params: in, Capability: c.ID, Zone: gateway.ZoneExternal})
}

// invokerFunc adapts a function to capability.Invoker.
type invokerFunc func(ctx context.Context, c capability.Capability, in json.RawMessage) (*gateway.Result, error)

func (f invokerFunc) Invoke(ctx context.Context, c capability.Capability, in json.RawMessage) (*gateway.Result, error) {
	return f(ctx, c, in)
}

// returning is an Invoker that answers every call with value.
func returning(value string) capability.Invoker {
	return invokerFunc(func(context.Context, capability.Capability, json.RawMessage) (*gateway.Result, error) {
		return gateway.NewResult([]byte(value)), nil
	})
}

// codeOf returns the code of a gateway error (0 for nil or another error).
func codeOf(err error) schemas.Code {
	if ge, ok := errors.AsType[*gateway.Error](err); ok {
		return ge.Code()
	}
	return 0
}

// dataOf returns a gateway error's data.
func dataOf(err error) map[string]any {
	if ge, ok := errors.AsType[*gateway.Error](err); ok {
		return ge.Data()
	}
	return nil
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newRegistry returns a registry of caps with cfg.
func newRegistry(t testing.TB, cfg capability.Config, caps ...capability.Capability) *capability.Registry {
	t.Helper()
	r, err := capability.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.Update(caps)
	return r
}

// tool is a capability of kind MCP tool.
func tool(id, desc, input string) capability.Capability {
	return capability.Capability{ID: id, Description: desc, Input: json.RawMessage(input), Method: "mcp." + id,
		Kind: capability.KindMCPTool, Source: "up"}
}

// decodeJSON unmarshals js into a generic value.
func decodeJSON(t testing.TB, js []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}
