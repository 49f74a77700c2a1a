package nekte_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	rn "github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

func TestMaxTasksPerOwner(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{}`)
	e.capability("wait", b.run)
	cfg := fastTasks()
	cfg.Tasks.MaxPerOwner = 2
	s := e.service(cfg)
	for _, id := range []string{"t-1", "t-2"} {
		openStream(t)(call(t, s, "alice", nekte.MethodDelegate, delegate(id, "wait", `{}`)))
		waitFor(t, b.started, id+" to start")
	}
	_, err := call(t, s, "alice", nekte.MethodDelegate, delegate("t-3", "wait", `{}`))
	if ge := wantCode(t, err, schemas.CodeQuota); ge.Message() != "Too many unfinished tasks: at most 2 per caller" {
		t.Fatalf("message %q", ge.Message())
	}
	// The refused task left nothing behind: its id is free.
	_, err = call(t, s, "alice", nekte.MethodTaskStatus, `{"task_id":"t-3"}`)
	wantCode(t, err, schemas.CodeTaskNotFound)
	// Another owner has a quota of its own.
	if evs := mustDelegate(t, s, "bob", delegate("t-1", "echo", `{}`)); evs[len(evs)-1].Event != nekte.EventComplete {
		t.Fatalf("bob's task: %s", names(evs))
	}
	// A suspended task still counts; a cancelled one does not.
	mustCall(t, s, "alice", rn.MethodTaskSuspend, `{"task_id":"t-1"}`)
	_, err = call(t, s, "alice", nekte.MethodDelegate, delegate("t-3", "wait", `{}`))
	wantCode(t, err, schemas.CodeQuota)
	mustCall(t, s, "alice", nekte.MethodTaskCancel, `{"task_id":"t-1"}`)
	openStream(t)(call(t, s, "alice", nekte.MethodDelegate, delegate("t-3", "wait", `{}`)))
	waitFor(t, b.started, "t-3 to start")
	close(b.release)
	waitStatus(t, s, "alice", "t-2", nekte.TaskCompleted)
	waitStatus(t, s, "alice", "t-3", nekte.TaskCompleted)
}

func TestMaxInputBytes(t *testing.T) {
	e := newEnv(t)
	cfg := fastTasks()
	cfg.Tasks.MaxInputBytes = 32
	s := e.service(cfg)
	at := `{"s":"` + strings.Repeat("x", 32-8) + `"}`
	mustDelegate(t, s, "alice", delegate("t-at", "echo", at))
	_, err := call(t, s, "alice", nekte.MethodDelegate, delegate("t-over", "echo", `{"s":"`+strings.Repeat("x", 32-7)+`"}`))
	ge := wantCode(t, err, schemas.CodeInvalidParams)
	if ge.Message() != "Invalid params: task.in must be at most 32 bytes" || ge.Data()["field"] != "task.in" {
		t.Fatalf("error %q %v", ge.Message(), ge.Data())
	}
}

func TestMaxResultBytes(t *testing.T) {
	e := newEnv(t)
	cfg := fastTasks()
	cfg.Tasks.MaxResultBytes = 16
	e.capability("at", returns(`"`+strings.Repeat("a", 14)+`"`))
	e.capability("over", returns(`"`+strings.Repeat("a", 15)+`"`))
	s := e.service(cfg)
	if evs := mustDelegate(t, s, "a", delegate("t-at", "at", `{}`)); evs[len(evs)-1].Event != nekte.EventComplete {
		t.Fatalf("at the limit: %s", names(evs))
	}
	evs := mustDelegate(t, s, "a", delegate("t-over", "over", `{}`))
	if last := evs[len(evs)-1]; last.Event != nekte.EventError || !strings.Contains(string(last.Data), "the result is larger than 16 bytes") {
		t.Fatalf("over the limit: %s %s", last.Event, last.Data)
	}
}

func TestTimeoutCappedAtMaxTimeout(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{}`)
	e.capability("wait", b.run)
	cfg := fastTasks()
	cfg.Tasks.DefaultTimeout, cfg.Tasks.MaxTimeout = 50*time.Millisecond, 80*time.Millisecond
	s := e.service(cfg)
	tests := []struct {
		id, timeout, message string
	}{
		{"t-long", "100000", "Task timed out: t-long after 80 ms"},
		{"t-default", "0", "Task timed out: t-default after 50 ms"},
	}
	for _, tt := range tests {
		evs := mustDelegate(t, s, "a", `{"task":{"id":"`+tt.id+`","desc":"","timeout_ms":`+tt.timeout+`,"cap":"wait"}}`)
		if last := evs[len(evs)-1]; !strings.Contains(string(last.Data), tt.message) {
			t.Fatalf("%s: last event %s %s", tt.id, last.Event, last.Data)
		}
	}
}

// chatty reports n progress steps, then answers.
func chatty(n int) behaviour {
	return func(ctx context.Context, _ json.RawMessage) (*gateway.Result, error) {
		p := gateway.ProgressFrom(ctx)
		for i := 1; i <= n; i++ {
			p(gateway.Progress{Progress: float64(i)})
		}
		return gateway.NewResult([]byte(`{"ok":true}`)), nil
	}
}

func TestEventLogKeepsTheNewest(t *testing.T) {
	e := newEnv(t)
	e.capability("chatty", chatty(10))
	cfg := fastTasks()
	cfg.Tasks.MaxEvents = 4
	s := e.service(cfg)
	mustDelegate(t, s, "a", delegate("t-1", "chatty", `{}`))
	replay := openStream(t)(call(t, s, "a", rn.MethodTaskStream, `{"task_id":"t-1"}`)).rest()
	if names(replay) != "progress,progress,status_change,complete" {
		t.Fatalf("replay %s", names(replay))
	}
	if string(replay[0].Data) != `{"processed":9,"total":0}` {
		t.Fatalf("first replayed event %s", replay[0].Data)
	}
}

func TestConfig(t *testing.T) {
	bad := -1.0
	tests := []struct {
		name string
		cfg  rn.Config
		want string
	}{
		{"zero is valid", rn.Config{}, ""},
		{"negative", rn.Config{Tasks: rn.TasksConfig{MaxPerOwner: -1}}, "tasks.max_per_owner must not be negative"},
		{"negative duration", rn.Config{Contexts: rn.ContextsConfig{MaxTTL: -time.Second}}, "contexts.max_ttl must not be negative"},
		{"default above max", rn.Config{Tasks: rn.TasksConfig{DefaultTimeout: 2 * time.Hour}}, "tasks.default_timeout (2h0m0s) is above tasks.max_timeout (1h0m0s)"},
		{"context default above max", rn.Config{Contexts: rn.ContextsConfig{DefaultTTL: 48 * time.Hour}}, "contexts.default_ttl (48h0m0s) is above contexts.max_ttl"},
		{"fractional ttl", rn.Config{Contexts: rn.ContextsConfig{DefaultTTL: 1500 * time.Millisecond}}, "must be whole seconds"},
		{"record too large", rn.Config{Tasks: rn.TasksConfig{MaxEventBytes: 600 << 10}}, "above the state store's value limit of 1048576 bytes"},
		{"catalog", rn.Config{Catalog: capability.Config{Search: capability.SearchConfig{Threshold: &bad}}}, "nekte: catalog: search: threshold must be between 0 and 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate: %v, want %q", err, tt.want)
			}
		})
	}
	d := rn.Config{}.WithDefaults()
	if d.Tasks.MaxPerOwner != rn.DefaultMaxPerOwner || d.Tasks.PollInterval != rn.DefaultPollInterval ||
		d.Contexts.MaxTTL != rn.DefaultMaxContextTTL || d.Receipts.Issuer != "gatehouse" {
		t.Fatalf("defaults %+v", d)
	}
}

func TestNewChecksTheStore(t *testing.T) {
	small := state.NewEmbedded(state.EmbeddedOptions{MaxValueBytes: 256 << 10})
	defer small.Close()
	e := newEnv(t)
	_, err := rn.New(rn.Config{}, rn.Options{KV: small, Catalog: e.catalog, Invoker: e.invoker})
	if err == nil || !strings.Contains(err.Error(), "value limit of 262144 bytes") {
		t.Fatalf("New on a small store: %v", err)
	}
	_, err = rn.New(rn.Config{}, rn.Options{KV: e.kv})
	if err == nil || !strings.Contains(err.Error(), "required") {
		t.Fatalf("New without a catalog: %v", err)
	}
}

func TestRoutes(t *testing.T) {
	e := newEnv(t)
	s := e.service(fastTasks())
	methods, prefixes := s.Routes()
	want := "nekte.discover nekte.invoke nekte.delegate nekte.context nekte.verify nekte.task.cancel nekte.task.resume nekte.task.status nekte.introspect nekte.task.stream nekte.task.suspend"
	if strings.Join(methods, " ") != want || prefixes != nil || s.Name() != "nekte" {
		t.Fatalf("routes %v %v", methods, prefixes)
	}
}
