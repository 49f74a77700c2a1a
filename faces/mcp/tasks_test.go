package mcpface

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

func TestTasksConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  TasksConfig
		want string // "" valid
	}{
		{"defaults", TasksConfig{}, ""},
		{"negative max", TasksConfig{MaxPerPrincipal: -1}, "max_per_principal"},
		{"negative ttl", TasksConfig{ResultTTL: -time.Second}, "result_ttl"},
		{"negative poll", TasksConfig{PollInterval: -time.Second}, "poll_interval"},
		{"poll equal to ttl", TasksConfig{ResultTTL: time.Minute, PollInterval: time.Minute}, ""},
		{"poll above ttl", TasksConfig{ResultTTL: time.Minute, PollInterval: time.Minute + time.Millisecond}, "must not exceed"},
		{"default poll above a short ttl", TasksConfig{ResultTTL: 500 * time.Millisecond}, "must not exceed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
	var c TasksConfig
	if c.on() || c.maxPerPrincipal() != DefaultTaskMaxPerPrincipal || c.resultTTL() != DefaultTaskResultTTL || c.pollInterval() != DefaultTaskPollInterval {
		t.Fatalf("defaults: on %v max %d ttl %v poll %v", c.on(), c.maxPerPrincipal(), c.resultTTL(), c.pollInterval())
	}
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestIndex(t *testing.T, limit int, ttl time.Duration) (*taskIndex, *clock) {
	t.Helper()
	c := &clock{t: time.UnixMilli(1_800_000_000_000)}
	kv := state.NewEmbedded(state.EmbeddedOptions{Now: c.now})
	t.Cleanup(func() { _ = kv.Close() })
	return &taskIndex{kv: kv, max: limit, ttl: ttl, now: c.now}, c
}

func TestTaskIndexLimitAndExpiry(t *testing.T) {
	ctx := context.Background()
	x, c := newTestIndex(t, 2, time.Minute)
	now := c.now().UnixMilli()
	entry := func(id string, ttl time.Duration) indexedTask {
		return indexedTask{ID: id, Created: now, Expires: now + ttl.Milliseconds()}
	}
	for _, id := range []string{"a", "b"} {
		if err := x.add(ctx, "alice", entry(id, time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	// At the limit: one more is refused, for alice only.
	err := x.add(ctx, "alice", entry("c", time.Minute))
	if ge, ok := errors.AsType[*gateway.Error](err); !ok || ge.Code() != schemas.CodeQuota || ge.Data()["limit"] != 2 {
		t.Fatalf("the task past the limit: %v", err)
	}
	if err := x.add(ctx, "bob", entry("a", time.Minute)); err != nil {
		t.Fatalf("another principal's first task: %v", err)
	}
	// Another principal's task of the same id is not alice's, and the other way round.
	if _, ok, _ := x.get(ctx, "bob", "b"); ok {
		t.Fatal("bob sees alice's task b")
	}
	// Removing one frees its place.
	if err := x.remove(ctx, "alice", "a"); err != nil {
		t.Fatal(err)
	}
	if err := x.add(ctx, "alice", entry("c", 10*time.Second)); err != nil {
		t.Fatalf("after a removal: %v", err)
	}
	// An entry is answered for until its expiry, not a millisecond after.
	c.add(10*time.Second - time.Millisecond)
	if _, ok, _ := x.get(ctx, "alice", "c"); !ok {
		t.Fatal("c expired early")
	}
	c.add(time.Millisecond)
	if _, ok, _ := x.get(ctx, "alice", "c"); ok {
		t.Fatal("c outlived its expiry")
	}
	// And its place is free again.
	if err := x.add(ctx, "alice", entry("d", time.Minute)); err != nil {
		t.Fatalf("after an expiry: %v", err)
	}
	ts, err := x.list(ctx, "alice")
	if err != nil || len(ts) != 2 || ts[0].ID != "b" || ts[1].ID != "d" {
		t.Fatalf("list: %+v %v", ts, err)
	}
}

func TestTaskIndexTTLFor(t *testing.T) {
	x := &taskIndex{ttl: time.Hour}
	ms := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		req  *int64
		want time.Duration
	}{
		{nil, time.Hour},
		{ms(0), time.Hour},
		{ms(-5), time.Hour},
		{ms(1500), 1500 * time.Millisecond},
		{ms(time.Hour.Milliseconds()), time.Hour},
		{ms(time.Hour.Milliseconds() + 1), time.Hour},
	} {
		if got := x.ttlFor(tc.req); got != tc.want {
			t.Errorf("ttlFor(%v) = %v, want %v", tc.req, got, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	modern := http.Header{}
	modern.Set(headerVersion, mcp.ProtocolVersion20260728)
	session := http.Header{}
	session.Set("Mcp-Session-Id", "s-1")
	for _, tc := range []struct {
		name   string
		h      http.Header
		body   string
		ok     bool
		modern bool
		method string
	}{
		{"plain tools/call", session, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, false, false, ""},
		{"task-augmented tools/call", session, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","task":{"ttl":1000}}}`, true, false, "tools/call"},
		{"task: null", session, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","task":null}}`, false, false, ""},
		{"tasks/get", session, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x"}}`, true, false, "tasks/get"},
		{"tasks/update 2026 by header", modern, `{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{"taskId":"x"}}`, true, true, "tasks/update"},
		{"2026 by _meta", http.Header{}, `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"taskId":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, true, true, "tasks/cancel"},
		{"notification", session, `{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"x"}}`, false, false, ""},
		{"batch", session, `[{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x"}}]`, false, false, ""},
		{"another method naming a task", session, `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"tasks/get"}}`, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, ok := classify(tc.h, []byte(tc.body), jsonrpc.Limits{})
			if ok != tc.ok || (ok && (tr.modern != tc.modern || tr.method != tc.method)) {
				t.Fatalf("classify = %+v, %v; want ok %v modern %v method %q", tr, ok, tc.ok, tc.modern, tc.method)
			}
			if ok && !tr.modern && tr.sid != "s-1" {
				t.Fatalf("session %q", tr.sid)
			}
		})
	}
}

func TestTaskOf(t *testing.T) {
	tf := &taskFace{poll: 2 * time.Second}
	entry := indexedTask{ID: "mcp-x", Created: 1_800_000_000_000, Expires: 1_800_000_060_000}
	for _, tc := range []struct {
		nekte, msg string
		err        bool
		want       mcp.TaskStatus
		wantMsg    string
	}{
		{"pending", "", false, mcp.TaskStatusWorking, ""},
		{"accepted", "", false, mcp.TaskStatusWorking, ""},
		{"running", "step 2", false, mcp.TaskStatusWorking, "step 2"},
		{"suspended", "", false, mcp.TaskStatusWorking, "suspended: resume it with nekte.task.resume"},
		{"completed", "", false, mcp.TaskStatusCompleted, ""},
		{"failed", "", true, mcp.TaskStatusFailed, "Task failed: boom"},
		{"cancelled", "", false, mcp.TaskStatusCancelled, ""},
	} {
		v := statusView{Status: tc.nekte, CreatedAt: entry.Created, UpdatedAt: entry.Created + 1500}
		v.Progress.Message = tc.msg
		if tc.err {
			v.Error = &struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}{-32007, "Task failed: boom"}
		}
		task := tf.taskOf(entry, v)
		if task.Status != tc.want || task.StatusMessage != tc.wantMsg {
			t.Errorf("%s: %s %q, want %s %q", tc.nekte, task.Status, task.StatusMessage, tc.want, tc.wantMsg)
		}
		if *task.TTL != 60_000 || task.CreatedAt != "2027-01-15T08:00:00Z" || task.LastUpdatedAt != "2027-01-15T08:00:01.5Z" {
			t.Errorf("%s: ttl %d created %s updated %s", tc.nekte, *task.TTL, task.CreatedAt, task.LastUpdatedAt)
		}
		if terminal := task.Status.IsTerminal(); terminal != (task.PollInterval == nil) || (!terminal && *task.PollInterval != 2000) {
			t.Errorf("%s: pollInterval %v", tc.nekte, task.PollInterval)
		}
	}
}

func TestFinalResult(t *testing.T) {
	for _, tc := range []struct {
		name, event, data string
		want              string // the result's JSON, or "error <code>"
	}{
		{"complete with the full result", "complete", `{"task_id":"t","status":"completed","out":{"full":{"content":[{"type":"text","text":"hi"}],"structuredContent":{"a":1}}}}`,
			`{"content":[{"type":"text","text":"hi"}],"structuredContent":{"a":1}}`},
		{"complete with the minimal level only", "complete", `{"task_id":"t","status":"completed","out":{"minimal":"hi"}}`,
			`{"content":[{"text":"hi","type":"text"}],"isError":false}`},
		{"a failed tool", "error", `{"task_id":"t","code":-32007,"message":"Task failed: t: no such file"}`,
			`{"content":[{"text":"Task failed: t: no such file","type":"text"}],"isError":true}`},
		{"a timeout", "error", `{"task_id":"t","code":-32006,"message":"Task timed out: t after 5 ms"}`, "error -32006"},
		{"cancelled", "cancelled", `{"task_id":"t","previous_status":"running"}`, "error -32024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := finalResult(taskEvent{Event: tc.event, Data: json.RawMessage(tc.data)})
			got := string(res)
			if err != nil {
				got = "error " + jsonNumber(int(gateway.AsError(err).Code()))
			}
			if got != tc.want {
				t.Fatalf("got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func jsonNumber(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestErrNotInRevision(t *testing.T) {
	tf := &taskFace{}
	for _, tc := range []struct {
		method string
		modern bool
	}{{methodTasksUpdate, false}, {methodTasksResult, true}, {methodTasksList, true}} {
		_, err := tf.dispatch(context.Background(), callerFor("alice"), &taskRequest{method: tc.method, modern: tc.modern})
		if ge := gateway.AsError(err); ge.Code() != schemas.CodeMethodNotFound || !strings.Contains(ge.Message(), tc.method) {
			t.Errorf("%s (modern %v): %v", tc.method, tc.modern, err)
		}
	}
}

func callerFor(subject string) faces.Caller {
	return faces.Caller{Principal: gateway.Principal{Subject: subject}, Protocol: gateway.ProtocolMCP}
}
