package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/internal/redistest"
)

// taskUpstream is an mcp-go server that declares tasks (2025-11-25) with two tools: work,
// a plain tool, and job, which the server runs only as a task of its own
// (taskSupport: required). Both wait ms in steps, report progress after each step, and
// record when they start, end and are cancelled.
type taskUpstream struct {
	url string

	mu     sync.Mutex
	events []string
	// jobStop ends the running job when the server's task is cancelled (tasks/cancel).
	jobStop chan struct{}
}

func (u *taskUpstream) record(e string) {
	u.mu.Lock()
	u.events = append(u.events, e)
	u.mu.Unlock()
}

func (u *taskUpstream) saw(e string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Contains(u.events, e)
}

func newTaskUpstream(t *testing.T) *taskUpstream {
	t.Helper()
	u := &taskUpstream{}
	// mcp-go runs a task in a context derived from the request that created it, which ends
	// with the request's response: a job waits on jobStop instead, which tasks/cancel
	// closes (one job runs at a time in the test).
	hooks := &mcpserver.TaskHooks{}
	hooks.AddOnTaskCancelled(func(context.Context, mcpserver.TaskMetrics) {
		u.mu.Lock()
		if u.jobStop != nil {
			close(u.jobStop)
			u.jobStop = nil
		}
		u.mu.Unlock()
	})
	srv := mcpserver.NewMCPServer("up", "1", mcpserver.WithToolCapabilities(true), mcpserver.WithTaskCapabilities(true, true, true),
		mcpserver.WithTaskHooks(hooks))
	run := func(kind string) mcpserver.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			text, ms, steps := req.GetString("text", ""), req.GetInt("ms", 0), max(req.GetInt("steps", 1), 1)
			stop := ctx.Done()
			if kind == "job" {
				ch := make(chan struct{})
				u.mu.Lock()
				u.jobStop = ch
				u.mu.Unlock()
				stop = ch
			}
			u.record(kind + " started " + text)
			for i := 1; i <= steps; i++ {
				select {
				case <-stop:
					u.record(kind + " cancelled " + text)
					return nil, context.Canceled
				case <-time.After(time.Duration(ms/steps) * time.Millisecond):
				}
				if meta := req.Params.Meta; meta != nil && meta.ProgressToken != nil {
					_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
						"progressToken": meta.ProgressToken, "progress": i, "total": steps, "message": fmt.Sprintf("step %d", i)})
				}
			}
			u.record(kind + " done " + text)
			// mcp-go's server may drop, or send after the result, a notification written
			// just before its handler returns (see docs/mcp.md, relaying): settle as
			// demo.MCP's tools do, so that the test sees every step.
			time.Sleep(progressSettle)
			return mcp.NewToolResultText(kind + " done: " + text), nil
		}
	}
	args := []mcp.ToolOption{mcp.WithString("text"), mcp.WithNumber("ms"), mcp.WithNumber("steps")}
	srv.AddTool(mcp.NewTool("work", args...), run("work"))
	srv.AddTool(mcp.NewTool("job", append(args, mcp.WithTaskSupport(mcp.TaskSupportRequired))...), run("job"))
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(hs.Close)
	u.url = hs.URL + "/mcp"
	return u
}

// tasksConfig is a gateway with MCP tasks on, NEKTE, alice and bob, bridging url.
func tasksConfig(url string) string {
	return fmt.Sprintf(`server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  api_keys:
    - {name: alice, hash: %q}
    - {name: bob, hash: %q}
mcp_face: {session_key: %q, tasks: {enabled: true, poll_interval: 200ms}}
nekte: {}
log: {level: debug}
routing:
  mcp:
    servers:
      - name: up
        http: {url: %q}
        protocol_versions: ["2025-11-25"]
        tasks: {poll_min: 20ms, poll_max: 100ms}
`, apiKeyHash("alice-key"), apiKeyHash("bob-key"), testSessionKey, url)
}

// taskClient is an mcp-go client of /mcp as the owner of key, speaking version, and the
// notifications it received.
type taskClient struct {
	*client.Client
	version string

	mu    sync.Mutex
	notes []mcp.JSONRPCNotification
}

func newTaskClient(t *testing.T, url, key, version string) *taskClient {
	t.Helper()
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(httpClient(t)),
		transport.WithHTTPHeaders(map[string]string{"X-API-Key": key})}
	if version == mcp.ProtocolVersion20251125 {
		opts = append(opts, transport.WithContinuousListening()) //nolint:staticcheck // notifications/tasks/status arrive on the GET stream
	}
	tr, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := &taskClient{Client: client.NewClient(tr), version: version}
	t.Cleanup(func() { _ = c.Close() })
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		c.mu.Lock()
		c.notes = append(c.notes, n)
		c.mu.Unlock()
	})
	ctx := ctxFor(t, testTimeout)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "tasks-test", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil || res.ProtocolVersion != version {
		t.Fatalf("initialize at %s: %+v, %v", version, res, err)
	}
	return c
}

// notifications returns the notifications of method received so far.
func (c *taskClient) notifications(method string) []mcp.JSONRPCNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []mcp.JSONRPCNotification
	for _, n := range c.notes {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

// create sends a task-augmented tools/call, as the typed API cannot (it reads every
// tools/call result as a CallToolResult), and returns the task, or the JSON-RPC error.
func (c *taskClient) create(t *testing.T, tool string, args map[string]any, ttlMs int64) (mcp.Task, *mcp.JSONRPCErrorDetails) {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": args, "task": map[string]any{"ttl": ttlMs},
		"_meta": map[string]any{"progressToken": "p-" + tool}}
	req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("create-" + tool), Method: "tools/call", Params: params}
	if c.version == mcp.ProtocolVersion20260728 {
		meta := params["_meta"].(map[string]any)
		meta[mcp.MetaKeyProtocolVersion] = c.version
		meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "tasks-test", "version": "1"}
		meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{}
		req.Header = http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {tool}}
	}
	resp, err := c.GetTransport().SendRequest(ctxFor(t, testTimeout), req)
	if err != nil {
		t.Fatalf("tools/call %s as a task: %v", tool, err)
	}
	if resp.Error != nil {
		return mcp.Task{}, resp.Error
	}
	var created struct {
		Task       mcp.Task `json:"task"`
		ResultType string   `json:"resultType"`
	}
	if err := json.Unmarshal(resp.Result, &created); err != nil || created.Task.TaskId == "" {
		t.Fatalf("CreateTaskResult: %s (%v)", resp.Result, err)
	}
	if want := map[bool]string{true: "task", false: ""}[c.version == mcp.ProtocolVersion20260728]; created.ResultType != want {
		t.Fatalf("resultType %q, want %q", created.ResultType, want)
	}
	return created.Task, nil
}

func (c *taskClient) get(t *testing.T, id string) (*mcp.GetTaskResult, error) {
	t.Helper()
	return c.GetTask(ctxFor(t, testTimeout), mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
}

// waitStatus polls tasks/get until the task has status want.
func (c *taskClient) waitStatus(t *testing.T, id string, want mcp.TaskStatus) *mcp.GetTaskResult {
	t.Helper()
	var last *mcp.GetTaskResult
	waitFor(t, func() bool {
		res, err := c.get(t, id)
		if err != nil {
			t.Fatalf("tasks/get %s: %v", id, err)
		}
		last = res
		return res.Status == want
	})
	return last
}

func resultText(t *testing.T, content []mcp.Content) string {
	t.Helper()
	if len(content) != 1 {
		t.Fatalf("content %+v", content)
	}
	tc, ok := content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("content %+v", content)
	}
	return tc.Text
}

// progressSettle is how long the task upstream's tools wait after their last progress
// notification before they return.
const progressSettle = 50 * time.Millisecond

// TestMCPTasks drives MCP tasks through two gateway replicas on one Redis, with mcp-go
// clients at 2025-11-25 and 2026-07-28: a task-augmented tools/call becomes a gateway task
// (nekte.task.status sees it), reported with progress and status notifications to the
// creating 2025 session, its result read with tasks/result and, on 2026-07-28, inline in
// tasks/get; another principal does not find it; the other replica answers tasks/get and
// tasks/result for it; a cancel reaches the upstream call; a tool the upstream runs as a
// task of its own is tracked and cancelled there.
func TestMCPTasks(t *testing.T) {
	up := newTaskUpstream(t)
	one, two := startMCPReplicas(t, redistest.Start(t), tasksConfig(up.url))
	alice := newTaskClient(t, one.base+"/mcp", "alice-key", mcp.ProtocolVersion20251125)

	t.Run("declared", func(t *testing.T) {
		caps := alice.GetServerCapabilities()
		if caps.Tasks == nil || caps.Tasks.List == nil || caps.Tasks.Cancel == nil || caps.Tasks.Requests == nil || caps.Tasks.Requests.Tools == nil {
			t.Fatalf("2025-11-25 tasks capability: %+v", caps.Tasks)
		}
		modern := newTaskClient(t, two.base+"/mcp", "alice-key", mcp.ProtocolVersion20260728)
		if _, ok := modern.GetServerCapabilities().Extensions["io.modelcontextprotocol/tasks"]; !ok {
			t.Fatalf("2026-07-28 extensions: %+v", modern.GetServerCapabilities().Extensions)
		}
		tools, err := alice.ListTools(ctxFor(t, testTimeout), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools.Tools {
			if tl.Execution == nil || tl.Execution.TaskSupport != mcp.TaskSupportOptional {
				t.Errorf("tool %s: execution %+v, want taskSupport optional", tl.Name, tl.Execution)
			}
		}
	})

	var done string // a completed task of alice's, for the other replica
	t.Run("2025-11-25 create, progress, status, result", func(t *testing.T) {
		task, rpcErr := alice.create(t, "work", map[string]any{"text": "a", "ms": 600, "steps": 3}, 60_000)
		if rpcErr != nil {
			t.Fatalf("create: %+v", rpcErr)
		}
		if task.Status != mcp.TaskStatusWorking || task.TTL == nil || *task.TTL != 60_000 || task.PollInterval == nil || *task.PollInterval != 200 {
			t.Fatalf("created %+v", task)
		}
		// The same task is NEKTE's: nekte.task.status as alice sees it.
		r := one.callKey("alice-key", "nekte.task.status", `{"task_id":"`+task.TaskId+`"}`)
		if r.Error != nil || !strings.Contains(string(r.Result), `"task_id":"`+task.TaskId+`"`) {
			t.Fatalf("nekte.task.status: %s %+v", r.Result, r.Error)
		}
		res, err := alice.TaskResult(ctxFor(t, testTimeout), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: task.TaskId}})
		if err != nil || resultText(t, res.Content) != "work done: a" {
			t.Fatalf("tasks/result: %+v, %v", res, err)
		}
		if rel, _ := res.Meta.AdditionalFields[mcp.RelatedTaskMetaKey].(map[string]any); rel["taskId"] != task.TaskId {
			t.Fatalf("tasks/result _meta: %+v", res.Meta)
		}
		got := alice.waitStatus(t, task.TaskId, mcp.TaskStatusCompleted)
		if got.PollInterval != nil || got.TTL == nil || *got.TTL != 60_000 {
			t.Fatalf("completed task %+v", got.Task)
		}
		waitFor(t, func() bool { return len(alice.notifications("notifications/progress")) >= 3 })
		for i, n := range alice.notifications("notifications/progress")[:3] {
			f := n.Params.AdditionalFields
			if f["progressToken"] != "p-work" || f["progress"] != float64(i+1) || f["total"] != float64(3) || f["message"] != fmt.Sprintf("step %d", i+1) {
				t.Errorf("progress %d: %+v", i, f)
			}
		}
		waitFor(t, func() bool {
			for _, n := range alice.notifications("notifications/tasks/status") {
				if n.Params.AdditionalFields["taskId"] == task.TaskId && n.Params.AdditionalFields["status"] == "completed" {
					return true
				}
			}
			return false
		})
		done = task.TaskId
	})

	t.Run("another principal does not find it", func(t *testing.T) {
		bob := newTaskClient(t, one.base+"/mcp", "bob-key", mcp.ProtocolVersion20251125)
		if _, err := bob.get(t, done); err == nil || !strings.Contains(err.Error(), "Task not found") {
			t.Fatalf("bob's tasks/get: %v", err)
		}
		if _, err := bob.TaskResult(ctxFor(t, testTimeout), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: done}}); err == nil {
			t.Fatal("bob read alice's result")
		}
		if _, err := bob.CancelTask(ctxFor(t, testTimeout), mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: done}}); err == nil {
			t.Fatal("bob cancelled alice's task")
		}
		list, err := bob.ListTasks(ctxFor(t, testTimeout), mcp.ListTasksRequest{})
		if err != nil || len(list.Tasks) != 0 {
			t.Fatalf("bob's tasks/list: %+v, %v", list, err)
		}
		list, err = alice.ListTasks(ctxFor(t, testTimeout), mcp.ListTasksRequest{})
		if err != nil || len(list.Tasks) != 1 || list.Tasks[0].TaskId != done || list.Tasks[0].Status != mcp.TaskStatusCompleted {
			t.Fatalf("alice's tasks/list: %+v, %v", list, err)
		}
	})

	t.Run("the other replica answers", func(t *testing.T) {
		there := newTaskClient(t, two.base+"/mcp", "alice-key", mcp.ProtocolVersion20251125)
		got, err := there.get(t, done)
		if err != nil || got.Status != mcp.TaskStatusCompleted {
			t.Fatalf("tasks/get on the other replica: %+v, %v", got, err)
		}
		res, err := there.TaskResult(ctxFor(t, testTimeout), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: done}})
		if err != nil || resultText(t, res.Content) != "work done: a" {
			t.Fatalf("tasks/result on the other replica: %+v, %v", res, err)
		}
	})

	t.Run("cancel reaches the upstream call", func(t *testing.T) {
		task, rpcErr := alice.create(t, "work", map[string]any{"text": "c", "ms": 20_000, "steps": 2}, 0)
		if rpcErr != nil {
			t.Fatalf("create: %+v", rpcErr)
		}
		if *task.TTL != time.Hour.Milliseconds() {
			t.Fatalf("no ttl asked: %d, want result_ttl", *task.TTL)
		}
		waitFor(t, func() bool { return up.saw("work started c") })
		// Cancelled through the other replica: the run here stops within the poll interval.
		there := newTaskClient(t, two.base+"/mcp", "alice-key", mcp.ProtocolVersion20251125)
		res, err := there.CancelTask(ctxFor(t, testTimeout), mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: task.TaskId}})
		if err != nil || res.Status != mcp.TaskStatusCancelled {
			t.Fatalf("tasks/cancel: %+v, %v", res, err)
		}
		waitFor(t, func() bool { return up.saw("work cancelled c") })
		if _, err := alice.TaskResult(ctxFor(t, testTimeout), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: task.TaskId}}); err == nil || !strings.Contains(err.Error(), "cancelled") {
			t.Fatalf("tasks/result of a cancelled task: %v", err)
		}
		if _, err := alice.CancelTask(ctxFor(t, testTimeout), mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: task.TaskId}}); err == nil || !strings.Contains(err.Error(), "already ended") {
			t.Fatalf("a second tasks/cancel: %v", err)
		}
	})

	t.Run("upstream tasks are tracked and cancelled", func(t *testing.T) {
		task, rpcErr := alice.create(t, "job", map[string]any{"text": "j", "ms": 300, "steps": 2}, 60_000)
		if rpcErr != nil {
			t.Fatalf("create: %+v", rpcErr)
		}
		res, err := alice.TaskResult(ctxFor(t, testTimeout), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: task.TaskId}})
		if err != nil || resultText(t, res.Content) != "job done: j" {
			t.Fatalf("tasks/result of an upstream task: %+v, %v; upstream %q", res, err, up.events)
		}
		// A plain tools/call of it, which the upstream refuses, works through the gateway too.
		call := mcp.CallToolRequest{}
		call.Params.Name = "job"
		call.Params.Arguments = map[string]any{"text": "sync", "ms": 50}
		plain, err := alice.CallTool(ctxFor(t, testTimeout), call)
		if err != nil || resultText(t, plain.Content) != "job done: sync" {
			t.Fatalf("tools/call of a task-only tool: %+v, %v", plain, err)
		}

		task, rpcErr = alice.create(t, "job", map[string]any{"text": "k", "ms": 20_000, "steps": 2}, 60_000)
		if rpcErr != nil {
			t.Fatalf("create: %+v", rpcErr)
		}
		waitFor(t, func() bool { return up.saw("job started k") })
		if _, err := alice.CancelTask(ctxFor(t, testTimeout), mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: task.TaskId}}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return up.saw("job cancelled k") })
	})

	t.Run("2026-07-28", func(t *testing.T) {
		modern := newTaskClient(t, two.base+"/mcp", "alice-key", mcp.ProtocolVersion20260728)
		task, rpcErr := modern.create(t, "work", map[string]any{"text": "m", "ms": 200, "steps": 2}, 60_000)
		if rpcErr != nil {
			t.Fatalf("create: %+v", rpcErr)
		}
		got := modern.waitStatus(t, task.TaskId, mcp.TaskStatusCompleted)
		if got.TaskId != task.TaskId {
			t.Fatalf("tasks/get: %+v", got)
		}
		// The finished task's tasks/get carries its result, the revision having no tasks/result.
		raw := rawTaskCall(t, two.base+"/mcp", "alice-key", "tasks/get", task.TaskId, "")
		var inline struct {
			Result struct {
				ResultType    string `json:"resultType"`
				Status        string `json:"status"`
				StatusMessage string `json:"statusMessage"`
				Inline        struct {
					Content []mcp.TextContent `json:"content"`
				} `json:"result"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(raw), &inline); err != nil || inline.Result.ResultType != "complete" || inline.Result.Status != "completed" ||
			inline.Result.StatusMessage != "" || len(inline.Result.Inline.Content) != 1 || inline.Result.Inline.Content[0].Text != "work done: m" {
			t.Fatalf("2026 tasks/get of a finished task: %s", raw)
		}
		// The other replica, and another principal.
		if got, err := alice.get(t, task.TaskId); err != nil || got.Status != mcp.TaskStatusCompleted {
			t.Fatalf("tasks/get at 2025-11-25 on the other replica: %+v, %v", got, err)
		}
		if raw := rawTaskCall(t, one.base+"/mcp", "bob-key", "tasks/get", task.TaskId, ""); !strings.Contains(raw, "Task not found") {
			t.Fatalf("bob: %s", raw)
		}
		// tasks/update: the gateway's tasks never wait for input.
		if raw := rawTaskCall(t, one.base+"/mcp", "alice-key", "tasks/update", task.TaskId, ""); !strings.Contains(raw, `"code":-32602`) || !strings.Contains(raw, "not waiting for input") {
			t.Fatalf("tasks/update: %s", raw)
		}
		// Not in this revision.
		if _, err := modern.TaskResult(ctxFor(t, testTimeout), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: task.TaskId}}); err == nil {
			t.Fatal("tasks/result at 2026-07-28")
		}
		// Mcp-Name must agree with params.taskId.
		if raw := rawTaskCall(t, one.base+"/mcp", "alice-key", "tasks/get", task.TaskId, "mcp-other"); !strings.Contains(raw, "-32020") {
			t.Fatalf("Mcp-Name of another task: %s", raw)
		}
		// Cancel at 2026-07-28.
		slow, rpcErr := modern.create(t, "work", map[string]any{"text": "n", "ms": 20_000, "steps": 2}, 60_000)
		if rpcErr != nil {
			t.Fatalf("create: %+v", rpcErr)
		}
		waitFor(t, func() bool { return up.saw("work started n") })
		res, err := modern.CancelTask(ctxFor(t, testTimeout), mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: slow.TaskId}})
		if err != nil || res.Status != mcp.TaskStatusCancelled {
			t.Fatalf("tasks/cancel at 2026-07-28: %+v, %v", res, err)
		}
		waitFor(t, func() bool { return up.saw("work cancelled n") })
	})
}

// rawTaskCall posts one 2026-07-28 task method for id as the owner of key, with Mcp-Name
// name ("" : the id), and returns the response body.
func rawTaskCall(t *testing.T, url, key, method, id, name string) string {
	t.Helper()
	if name == "" {
		name = id
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":%q,"params":{"taskId":%q,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`, method, id)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

// TestMCPTasksLimits runs mcp_face.tasks' bounds at their edges on one gateway: a ttl
// asked for above result_ttl is lowered to it, a principal holding max_per_principal tasks
// is refused one more (5000) while another is not, and a task's place frees when its ttl
// has passed, after which the face no longer answers for it.
func TestMCPTasksLimits(t *testing.T) {
	up := newTaskUpstream(t)
	yaml := strings.Replace(tasksConfig(up.url), "tasks: {enabled: true, poll_interval: 200ms}",
		"tasks: {enabled: true, max_per_principal: 2, result_ttl: 1500ms, poll_interval: 100ms}", 1)
	ts := startWith(t, yaml, Options{})
	waitForTools(t, ts)
	alice := newTaskClient(t, ts.base+"/mcp", "alice-key", mcp.ProtocolVersion20251125)
	bob := newTaskClient(t, ts.base+"/mcp", "bob-key", mcp.ProtocolVersion20251125)

	long, rpcErr := alice.create(t, "work", map[string]any{"text": "1", "ms": 1}, 1501)
	if rpcErr != nil || *long.TTL != 1500 {
		t.Fatalf("a ttl above result_ttl: %+v %+v", long, rpcErr)
	}
	short, rpcErr := alice.create(t, "work", map[string]any{"text": "2", "ms": 1}, 300)
	if rpcErr != nil || *short.TTL != 300 {
		t.Fatalf("a ttl below result_ttl: %+v %+v", short, rpcErr)
	}
	if _, rpcErr := alice.create(t, "work", map[string]any{"text": "3", "ms": 1}, 300); rpcErr == nil || rpcErr.Code != 5000 ||
		!strings.Contains(rpcErr.Message, "at most 2 per caller") {
		t.Fatalf("a task past max_per_principal: %+v", rpcErr)
	}
	if _, rpcErr := bob.create(t, "work", map[string]any{"text": "b", "ms": 1}, 300); rpcErr != nil {
		t.Fatalf("another principal's task: %+v", rpcErr)
	}
	// Past its ttl the short task is gone, and its place is free.
	time.Sleep(time.Until(parseTime(t, short.CreatedAt).Add(300 * time.Millisecond)))
	waitFor(t, func() bool {
		_, err := alice.get(t, short.TaskId)
		return err != nil && strings.Contains(err.Error(), "Task not found")
	})
	if _, rpcErr := alice.create(t, "work", map[string]any{"text": "4", "ms": 1}, 300); rpcErr != nil {
		t.Fatalf("a task after one expired: %+v", rpcErr)
	}
	if got, err := alice.get(t, long.TaskId); err != nil || got.TaskId != long.TaskId {
		t.Fatalf("the long task: %+v, %v", got, err)
	}
}

func parseTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMCPTasksNeedNekte: mcp_face.tasks.enabled without the nekte section is refused at
// load, naming the key.
func TestMCPTasksNeedNekte(t *testing.T) {
	_, err := Parse("test.yaml", []byte(strings.Replace(tasksConfig("http://127.0.0.1:1/mcp"), "nekte: {}\n", "", 1)))
	if err == nil || !strings.Contains(err.Error(), "mcp_face.tasks.enabled") || !strings.Contains(err.Error(), "nekte section") {
		t.Fatalf("got %v", err)
	}
	if _, err := Parse("test.yaml", []byte(strings.Replace(tasksConfig("http://127.0.0.1:1/mcp"), "poll_interval: 200ms", "poll_interval: 2h", 1))); err == nil ||
		!strings.Contains(err.Error(), "must not exceed result_ttl") {
		t.Fatalf("poll_interval above result_ttl: %v", err)
	}
}
