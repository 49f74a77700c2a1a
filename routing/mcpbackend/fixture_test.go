package mcpbackend_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func TestPaginationFollowedToTheEnd(t *testing.T) {
	b, _ := start(t, []mcpbackend.Config{fixture("fx", map[string]string{
		"FIXTURE_TOOLS": "7", "FIXTURE_RESOURCES": "5", "FIXTURE_PAGE": "2"})})
	cat := b.Catalog()
	tests := []struct {
		list []mcpbackend.Entry
		want int
	}{
		{cat.Tools, 7 + 7}, // the fixture's own seven tools and seven extra ones
		{cat.Resources, 5},
		{cat.ResourceTemplates, 1},
		{cat.Prompts, 1},
	}
	for i, tt := range tests {
		if len(tt.list) != tt.want {
			t.Errorf("list %d: %d entries, want %d: %v", i, len(tt.list), tt.want, names(tt.list))
		}
	}
	if got := callText(t, b, "t07", `{}`); got != "t07" {
		t.Fatalf("t07 = %q", got)
	}
}

func TestToolResourcePrompt(t *testing.T) {
	b, _ := start(t, []mcpbackend.Config{fixture("fx", map[string]string{"FIXTURE_RESOURCES": "2"})})
	ctx := ctxTimeout(t, 10*time.Second)
	if got := callText(t, b, "echo", `{"message":"héllo <&>"}`); got != "héllo <&>" {
		t.Fatalf("echo = %q", got)
	}
	for uri, want := range map[string]string{"res://fx/item/2": "item res://fx/item/2", "res://fx/tmpl/42": "templated res://fx/tmpl/42"} {
		res, err := b.ReadResource(ctx, uri)
		if err != nil || !strings.Contains(string(res), want) {
			t.Fatalf("read %s = %s, %v", uri, res, err)
		}
	}
	res, err := b.GetPrompt(ctx, "greet", json.RawMessage(`{"who":"ada"}`))
	if err != nil || !strings.Contains(string(res), "hello ada") {
		t.Fatalf("greet = %s, %v", res, err)
	}
	for _, tt := range []struct {
		name string
		call func() error
		code schemas.Code
	}{
		{"unknown tool", func() error { _, err := b.CallTool(ctx, "nope", nil); return err }, schemas.CodeCapabilityNotFound},
		{"array args", func() error { _, err := b.CallTool(ctx, "echo", json.RawMessage(`[1]`)); return err }, schemas.CodeInvalidParams},
		{"unknown prompt", func() error { _, err := b.GetPrompt(ctx, "nope", nil); return err }, schemas.CodeCapabilityNotFound},
		{"prompt args not strings", func() error { _, err := b.GetPrompt(ctx, "greet", json.RawMessage(`{"who":1}`)); return err }, schemas.CodeInvalidParams},
		{"upstream error passed through", func() error {
			_, err := b.ReadResource(ctx, "res://fx/item/9")
			if ge, ok := errors.AsType[*gateway.Error](err); !ok || !ge.IsWire() || ge.Data()["upstream"] != "fx" {
				t.Errorf("not the upstream's error: %v", err)
			}
			return err
		}, schemas.CodeInvalidParams},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := codeOf(tt.call()); got != tt.code {
				t.Fatalf("code %d, want %d", got, tt.code)
			}
		})
	}
}

func TestListChangedDelta(t *testing.T) {
	b, _ := start(t, []mcpbackend.Config{fixture("fx", nil)})
	events := make(chan mcpbackend.Event, 16)
	defer b.OnEvent(func(e mcpbackend.Event) { nonBlocking(events, e) })()
	before := b.Catalog()
	echo := entry(t, before.Tools, "echo")
	if len(echo.Version) != 16 {
		t.Fatalf("echo version %q", echo.Version)
	}
	callText(t, b, "add_tool", `{"name":"late"}`)
	for seen := false; !seen; {
		select {
		case e := <-events:
			if e.Catalog.Generation <= before.Generation {
				continue // the initial load, delivered after the listener was added
			}
			if e.Kind != mcpbackend.EventCatalogChanged || strings.Join(e.Delta.Tools.Added, ",") != "late" ||
				len(e.Delta.Tools.Removed)+len(e.Delta.Tools.Changed) != 0 || !e.Delta.Prompts.Empty() {
				t.Fatalf("event %+v", e)
			}
			seen = true
		case <-time.After(5 * time.Second):
			t.Fatal("no catalog event after a tool was added")
		}
	}
	if got := callText(t, b, "late", `{}`); got != "i am late" {
		t.Fatalf("late = %q", got)
	}
	if v := entry(t, b.Catalog().Tools, "echo").Version; v != echo.Version {
		t.Fatalf("echo's version changed: %s → %s", echo.Version, v)
	}
}

// pidOf asks the fixture for its process id.
func pidOf(t *testing.T, b *mcpbackend.Bridge, tool string) int {
	t.Helper()
	pid, err := strconv.Atoi(callText(t, b, tool, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestChildKilledMidCall(t *testing.T) {
	b, _ := start(t, []mcpbackend.Config{fixture("fx", nil)})
	pid := pidOf(t, b, "pid")
	const n = 32
	errs := make(chan error, n)
	var started sync.WaitGroup
	for i := range n {
		started.Go(func() {
			_, err := b.CallTool(context.Background(), "slow", json.RawMessage(`{"ms":30000,"tag":"k`+strconv.Itoa(i)+`"}`))
			errs <- err
		})
	}
	time.Sleep(300 * time.Millisecond) // let the calls reach the child
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for range n {
		err := <-errs
		var ge *gateway.Error
		if !errors.As(err, &ge) || ge.Code() != schemas.CodeUnavailable || ge.Data()["upstream"] != "fx" ||
			!strings.Contains(ge.Data()["reason"].(string), "killed") {
			t.Fatalf("in-flight call ended with %v (data %v), want UNAVAILABLE naming the kill", err, ge.Data())
		}
	}
	if d := time.Since(killed); d > 2*time.Second {
		t.Fatalf("in-flight calls took %s to fail", d)
	}
	started.Wait()
	waitFor(t, 10*time.Second, "the child to restart", func() bool {
		return b.Status()[0].Live == 1 && entry(t, b.Catalog().Tools, "echo").Available
	})
	if got := pidOf(t, b, "pid"); got == pid {
		t.Fatal("the child was not restarted")
	}
	if got := callText(t, b, "echo", `{"message":"back"}`); got != "back" {
		t.Fatalf("echo after restart = %q", got)
	}
	if st := b.Status()[0]; st.Restarts < 1 {
		t.Fatalf("status %+v", st)
	}
}

func TestHungChildDetectedWithinOneHeartbeat(t *testing.T) {
	cfg := fixture("fx", nil)
	b, _ := start(t, []mcpbackend.Config{cfg})
	pid := pidOf(t, b, "pid")
	events := make(chan mcpbackend.Event, 16)
	defer b.OnEvent(func(e mcpbackend.Event) { nonBlocking(events, e) })()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	waitFor(t, 2*time.Second, "the child to stop", func() bool {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true // no procfs: the stop is asynchronous, but quick
		}
		_, rest, _ := strings.Cut(string(stat), ") ")
		return strings.HasPrefix(rest, "T")
	})
	_, err := b.CallTool(ctxTimeout(t, 10*time.Second), "echo", json.RawMessage(`{"message":"x"}`))
	failed := time.Since(stopped)
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Code() != schemas.CodeUnavailable || !strings.Contains(ge.Data()["reason"].(string), "no answer to ping") {
		t.Fatalf("call to a hung child: %v", err)
	}
	if slack := 300 * time.Millisecond; failed > cfg.Heartbeat.Interval+slack {
		t.Fatalf("hang detected after %s, want within %s", failed, cfg.Heartbeat.Interval)
	}
	// While it is down, its tools are unavailable.
	for down := false; !down; {
		select {
		case e := <-events:
			down = slices.Contains(e.Delta.Tools.Changed, "echo") && !entry(t, e.Catalog.Tools, "echo").Available
		case <-time.After(5 * time.Second):
			t.Fatal("no catalog event when the upstream went down")
		}
	}
	waitFor(t, 10*time.Second, "recovery", func() bool { return b.Ready(context.Background()) == nil })
	if got := pidOf(t, b, "pid"); got == pid {
		t.Fatal("not restarted")
	}
}

func TestConcurrencyCap(t *testing.T) {
	cfg := fixture("fx", nil)
	cfg.MaxConcurrent = 4
	cfg.QueueTimeout = 5 * time.Second
	b, _ := start(t, []mcpbackend.Config{cfg})
	slow := func(ctx context.Context, ms int) error {
		_, err := b.CallTool(ctx, "slow", json.RawMessage(`{"ms":`+strconv.Itoa(ms)+`}`))
		return err
	}
	t.Run("at the cap every call runs at once", func(t *testing.T) {
		var wg sync.WaitGroup
		begin := time.Now()
		for range 4 {
			wg.Go(func() {
				if err := slow(context.Background(), 300); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if d := time.Since(begin); d > 550*time.Millisecond {
			t.Fatalf("4 calls under a cap of 4 took %s", d)
		}
	})
	t.Run("one past the cap waits, then fails at its deadline", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { _ = slow(context.Background(), 800) })
		}
		time.Sleep(150 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		err := slow(ctx, 10)
		var ge *gateway.Error
		if !errors.As(err, &ge) || ge.Code() != schemas.CodeDeadlineExceeded || ge.Data()["layer"] != gateway.LayerGateway ||
			ge.Data()["retry_after_ms"] == nil {
			t.Fatalf("5th call: %v (data %v); want DEADLINE_EXCEEDED at layer gateway: the wait for a slot ran out", err, ge.Data())
		}
		// One with time to wait gets the first free slot.
		begin := time.Now()
		if err := slow(context.Background(), 10); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(begin); d < 300*time.Millisecond {
			t.Fatalf("the 5th call did not wait (%s)", d)
		}
		wg.Wait()
	})
}

func TestCancellationReachesTheServer(t *testing.T) {
	b, logs := start(t, []mcpbackend.Config{fixture("fx", nil)})
	for _, tt := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		code schemas.Code
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			return ctx, cancel
		}, schemas.CodeCancelled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 200*time.Millisecond)
		}, schemas.CodeDeadlineExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			begin := time.Now()
			_, err := b.CallTool(ctx, "slow", json.RawMessage(`{"ms":20000,"tag":"`+tt.name+`"}`))
			if codeOf(err) != tt.code || time.Since(begin) > 2*time.Second {
				t.Fatalf("%v after %s", err, time.Since(begin))
			}
			waitFor(t, 5*time.Second, "the server to see notifications/cancelled", func() bool {
				return strings.Contains(logs.String(), "cancelled "+tt.name)
			})
		})
	}
}

func TestStderrCaptured(t *testing.T) {
	cfg := fixture("fx", map[string]string{"FIXTURE_STDERR": "fixture says hello"})
	cfg.Stdio.StderrLineBytes = 100
	b, logs := start(t, []mcpbackend.Config{cfg})
	waitFor(t, 5*time.Second, "the start-up line", func() bool {
		return strings.Contains(logs.String(), `msg="upstream stderr" upstream=fx slot=0`) &&
			strings.Contains(logs.String(), `line="fixture says hello"`)
	})
	callText(t, b, "stderr", `{"text":"abcdefghij","repeat":5000}`)
	callText(t, b, "stderr", `{"text":"after"}`)
	waitFor(t, 5*time.Second, "the long line, cut", func() bool {
		return strings.Contains(logs.String(), `line=after`) && strings.Contains(logs.String(), "truncated=true")
	})
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, "abcdefghij") && len(l) > 400 {
			t.Fatalf("a stderr line was logged unbounded (%d bytes)", len(l))
		}
	}
}

func TestNamesAndFilters(t *testing.T) {
	mk := func(name, mode string, f mcpbackend.FilterConfig) mcpbackend.Config {
		c := fixture(name, nil)
		c.Names.Mode = mode
		c.Tools = f
		return c
	}
	tests := []struct {
		name      string
		cfgs      []mcpbackend.Config
		want      []string // tools that must exist and be available
		collision string   // a name that must collide, or ""
	}{
		{"on_collision prefixes both", []mcpbackend.Config{mk("a", "on_collision", mcpbackend.FilterConfig{}), mk("b", "on_collision", mcpbackend.FilterConfig{})},
			[]string{"a__echo", "b__echo"}, ""},
		{"always beside never", []mcpbackend.Config{mk("a", "always", mcpbackend.FilterConfig{}), mk("b", "never", mcpbackend.FilterConfig{})},
			[]string{"a__echo", "echo"}, ""},
		{"on_collision gives way to never", []mcpbackend.Config{mk("a", "on_collision", mcpbackend.FilterConfig{}), mk("b", "never", mcpbackend.FilterConfig{})},
			[]string{"a__echo", "echo"}, ""},
		{"never with never collides", []mcpbackend.Config{mk("a", "never", mcpbackend.FilterConfig{}), mk("b", "never", mcpbackend.FilterConfig{Allow: []string{"echo", "pid"}})},
			[]string{"slow"}, "echo"},
		{"filters", []mcpbackend.Config{mk("a", "never", mcpbackend.FilterConfig{Allow: []string{"e*", "p*"}, Deny: []string{"pid"}})},
			[]string{"echo", "progress"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, logs := start(t, tt.cfgs)
			cat := b.Catalog()
			for _, n := range tt.want {
				if e := entry(t, cat.Tools, n); !e.Available {
					t.Fatalf("%s unavailable: %s", n, e.Reason)
				}
			}
			if tt.name == "filters" && len(cat.Tools) != 2 {
				t.Fatalf("filtered tools %v", names(cat.Tools))
			}
			err := b.Ready(context.Background())
			if tt.collision == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), `"`+tt.collision+`" is exposed by upstreams a and b`) {
				t.Fatalf("Ready = %v", err)
			}
			if !strings.Contains(logs.String(), "MCP name collision") {
				t.Fatal("collision not logged")
			}
			for _, e := range cat.Tools {
				if e.Name == tt.collision && e.Available {
					t.Fatalf("colliding %s from %s is available", e.Name, e.Upstream)
				}
			}
			_, err = b.CallTool(ctxTimeout(t, time.Second), tt.collision, json.RawMessage(`{"message":"x"}`))
			if codeOf(err) != schemas.CodeUnavailable {
				t.Fatalf("call to a colliding tool: %v", err)
			}
		})
	}
}

func TestProgressAndTarget(t *testing.T) {
	b, _ := start(t, []mcpbackend.Config{fixture("fx", nil)})
	var got []mcpbackend.Progress
	var mu sync.Mutex
	ctx := mcpbackend.WithProgress(ctxTimeout(t, 10*time.Second), func(p mcpbackend.Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	})
	if _, err := b.CallTool(ctx, "progress", json.RawMessage(`{"steps":3}`)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(got) != 3 || got[2].Progress != 3 || got[2].Total == nil || *got[2].Total != 3 || got[2].Message != "step 3" {
		t.Fatalf("progress %+v", got)
	}
	mu.Unlock()

	target := b.Target("mcp.")
	call := func(ctx context.Context, method, params string) (*gateway.Result, error) {
		return target.Invoke(ctx, &gateway.Call{Method: method, Params: []byte(params), ID: jsonrpc.ID{}, Zone: gateway.ZoneInternal})
	}
	t.Run("progress reaches a sink set with gateway.WithProgress", func(t *testing.T) {
		var reports []gateway.Progress
		var mu sync.Mutex
		ctx := gateway.WithProgress(ctxTimeout(t, 10*time.Second), func(p gateway.Progress) {
			mu.Lock()
			reports = append(reports, p)
			mu.Unlock()
		})
		res, err := call(ctx, "mcp.progress", `{"steps":2}`)
		if err != nil || res.Stream != nil || firstText(t, res.Value) == "" {
			t.Fatalf("result %+v, err %v: want a plain result", res, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(reports) != 2 || reports[0].Progress != 1 || reports[1].Progress != 2 || *reports[1].Total != 2 || reports[0].Message != "step 1" {
			t.Fatalf("progress %+v, want steps 1 and 2 of 2", reports)
		}
	})
	t.Run("no sink, no progress token", func(t *testing.T) {
		res, err := call(ctxTimeout(t, 10*time.Second), "mcp.progress", `{"steps":2}`)
		if err != nil || res.Stream != nil {
			t.Fatalf("result %+v, err %v", res, err)
		}
	})
	t.Run("method per tool", func(t *testing.T) {
		res, err := call(ctxTimeout(t, 5*time.Second), "mcp.echo", `{"message":"m"}`)
		if err != nil || firstText(t, res.Value) != "m" {
			t.Fatalf("%v %v", res, err)
		}
		_, err = call(ctxTimeout(t, 5*time.Second), "mcp.fail", `{}`)
		var ge *gateway.Error
		if !errors.As(err, &ge) || ge.Code() != schemas.CodeToolFailed || ge.Data()["tool"] != "fail" {
			t.Fatalf("failed tool: %v", err)
		}
	})
	t.Run("tools/call keeps isError results", func(t *testing.T) {
		res, err := call(ctxTimeout(t, 5*time.Second), mcpbackend.MethodToolsCall, `{"name":"fail","arguments":{}}`)
		if err != nil || !strings.Contains(string(res.Value), `"isError":true`) {
			t.Fatalf("%s %v", res.Value, err)
		}
	})
	if err := target.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestProtocolVersionNegotiated(t *testing.T) {
	for _, v := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		t.Run(v, func(t *testing.T) {
			cfg := fixture("fx", nil)
			cfg.ProtocolVersions = []string{v}
			b, _ := start(t, []mcpbackend.Config{cfg})
			if got := b.Status()[0].ProtocolVersion; got != v {
				t.Fatalf("negotiated %s", got)
			}
			callText(t, b, "add_tool", `{"name":"x"}`)
			waitFor(t, 5*time.Second, "list_changed", func() bool { return hasName(b.Catalog().Tools, "x") })
		})
	}
}
