package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// demoMCPEnv makes this test binary serve the demo MCP fixtures over stdio (see
// TestDemoMCPProcess).
const demoMCPEnv = "GATEHOUSE_TEST_DEMO_MCP"

// TestDemoMCPProcess is not a test of its own: a gateway under test runs this binary with
// demoMCPEnv set as a stdio MCP upstream, and it then serves demo.MCP (the MCP
// conformance fixtures) on stdin and stdout until stdin closes.
func TestDemoMCPProcess(t *testing.T) {
	if os.Getenv(demoMCPEnv) != "1" {
		t.Skip("the stdio MCP upstream of the gateway tests; runs only as their child process")
	}
	// mcp-go's stdio server writes notifications from another goroutine than responses; the
	// fixture pauses a step after its last report so that they come first. This child runs
	// with the race detector beside other tests, so it gets a longer step than the default.
	opts := demo.MCPOptions{StepDelay: 250 * time.Millisecond}
	if err := demo.NewMCP(opts).ServeStdio(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// withDemoMCP returns yaml (baseConfig or a variant of it) with the demo MCP fixtures
// bridged over stdio; mcpKeys are further keys of routing.mcp, each line indented by 4.
func withDemoMCP(t *testing.T, yaml, mcpKeys string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	section := fmt.Sprintf(`routing:
  demo: {}
  mcp:
%s    servers:
      - name: demo
        stdio: {command: %q, args: ["-test.run=^TestDemoMCPProcess$"], env: {%s: "1"}}
`, mcpKeys, self, demoMCPEnv)
	if !strings.Contains(yaml, "routing:\n  demo: {}\n") {
		t.Fatal("the configuration has no routing section to replace")
	}
	return strings.Replace(yaml, "routing:\n  demo: {}\n", section, 1)
}

// externalMCP lets boundary callers call the bridged tools as methods.
const externalMCP = "    direct_zones: [external]\n"

const (
	progressTool = `{"jsonrpc":"2.0","method":"mcp.test_tool_with_progress","params":{},"id":%q}`
	progressDone = "Tool with progress executed successfully"
)

// progressNote is a decoded $/progress notification.
type progressNote struct {
	Method string `json:"method"`
	Params struct {
		ID       json.RawMessage `json:"id"`
		Progress float64         `json:"progress"`
		Total    *float64        `json:"total"`
		Message  *string         `json:"message"`
	} `json:"params"`
}

// splitProgress sorts the messages of one call into its $/progress notifications (which
// must all come before the response) and the response.
func splitProgress(t *testing.T, msgs []string) ([]progressNote, response) {
	t.Helper()
	var notes []progressNote
	for i, m := range msgs {
		if !strings.Contains(m, `"method":"$/progress"`) {
			if i != len(msgs)-1 {
				t.Fatalf("message %d of %d is not progress but not last either: %s", i, len(msgs), m)
			}
			return notes, decodeOne(t, m)
		}
		var n progressNote
		if err := json.Unmarshal([]byte(m), &n); err != nil {
			t.Fatalf("progress %s: %v", m, err)
		}
		notes = append(notes, n)
	}
	t.Fatalf("no response among %q", msgs)
	return nil, response{}
}

// checkDemoProgress checks the demo tool's three reports: 0, 50 and 100 of 100, each for
// request id, increasing, with their step messages.
func checkDemoProgress(t *testing.T, notes []progressNote, id string) {
	t.Helper()
	want := []float64{0, 50, 100}
	if len(notes) != len(want) {
		t.Fatalf("%d progress notifications, want %d: %+v", len(notes), len(want), notes)
	}
	for i, n := range notes {
		if string(n.Params.ID) != id || n.Params.Progress != want[i] || n.Params.Total == nil || *n.Params.Total != 100 ||
			n.Params.Message == nil || *n.Params.Message != fmt.Sprintf("Completed step %d of 100", int(want[i])) {
			t.Errorf("progress %d: %+v; want id %s, progress %v of 100", i, n.Params, id, want[i])
		}
	}
}

func checkProgressDone(t *testing.T, r response) {
	t.Helper()
	if r.Error != nil || !strings.Contains(string(r.Result), progressDone) {
		t.Fatalf("response %+v %s; want the tool's result", r.Error, r.Result)
	}
}

func TestMCPProgressOverWebSocket(t *testing.T) {
	ts := start(t, withDemoMCP(t, baseConfig, externalMCP), nil)
	c := dialWS(t, ts, nil)
	wsSend(t, c, fmt.Sprintf(progressTool, "p1"))
	var msgs []string
	for len(msgs) == 0 || strings.Contains(msgs[len(msgs)-1], `"$/progress"`) {
		msgs = append(msgs, wsRead(t, c, 10*time.Second))
	}
	notes, resp := splitProgress(t, msgs)
	checkDemoProgress(t, notes, `"p1"`)
	checkProgressDone(t, resp)
	// Nothing of p1 follows its response.
	wsSend(t, c, `{"jsonrpc":"2.0","method":"get_data","id":"marker"}`)
	if r := decodeOne(t, wsRead(t, c, 5*time.Second)); string(r.ID) != `"marker"` {
		t.Fatalf("after the response came %+v; want the marker's response", r)
	}
}

// postEvents posts body accepting an event stream and returns the Content-Type and the
// data of each event (or the whole body, when it is not an event stream).
func postEvents(t *testing.T, ts *testServer, body string) (string, []string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.base+"/rpc", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	ct := resp.Header.Get("Content-Type")
	if ct != "text/event-stream" {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return ct, []string{string(b)}
	}
	var events []string
	var data []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			events = append(events, strings.Join(data, "\n"))
			data = nil
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		default:
			t.Fatalf("unexpected event stream line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ct, events
}

func TestMCPProgressOverHTTP(t *testing.T) {
	ts := start(t, withDemoMCP(t, baseConfig, externalMCP), nil)
	t.Run("event stream", func(t *testing.T) {
		ct, events := postEvents(t, ts, fmt.Sprintf(progressTool, "s1"))
		if ct != "text/event-stream" {
			t.Fatalf("Content-Type %q (body %q); want an event stream", ct, events)
		}
		notes, resp := splitProgress(t, events)
		checkDemoProgress(t, notes, `"s1"`)
		checkProgressDone(t, resp)
	})
	t.Run("plain JSON as before", func(t *testing.T) {
		status, hdr, body := ts.post(fmt.Sprintf(progressTool, "j1"))
		if status != http.StatusOK || hdr.Get("Content-Type") != "application/json" || strings.Contains(body, "$/progress") {
			t.Fatalf("status %d, Content-Type %q, body %s", status, hdr.Get("Content-Type"), body)
		}
		r := decodeOne(t, body)
		checkProgressDone(t, r)
		if string(r.ID) != `"j1"` {
			t.Fatalf("id %s", r.ID)
		}
	})
	t.Run("a batch stays plain JSON", func(t *testing.T) {
		ct, body := postEvents(t, ts, "["+fmt.Sprintf(progressTool, "b1")+","+fmt.Sprintf(progressTool, "b2")+"]")
		if ct != "application/json" || strings.Contains(body[0], "$/progress") {
			t.Fatalf("Content-Type %q, body %s", ct, body[0])
		}
		for _, r := range decodeMany(t, body[0]) {
			checkProgressDone(t, r)
		}
	})
}

// reporter is a test target that reports progress 1…n of n before answering, and records
// which calls it was given a progress sink for.
type reporter struct {
	n       int
	message string

	mu    sync.Mutex
	sinks map[string]func(gateway.Progress) // call id (raw) → its sink; "" for notifications
	done  chan struct{}                     // closed after the first call reported, if not nil
	once  sync.Once
}

func (r *reporter) Name() string { return "reporter" }

func (r *reporter) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	sink := gateway.ProgressFrom(ctx)
	r.mu.Lock()
	if r.sinks == nil {
		r.sinks = map[string]func(gateway.Progress){}
	}
	key := ""
	if !call.IsNotification() {
		key = call.ID.Raw()
	}
	r.sinks[key] = sink
	r.mu.Unlock()
	if sink != nil {
		total := float64(r.n)
		for i := 1; i <= r.n; i++ {
			sink(gateway.Progress{Progress: float64(i), Total: &total, Message: r.message})
		}
	}
	if r.done != nil {
		r.once.Do(func() { close(r.done) })
	}
	return gateway.NewResult([]byte(`"done"`)), nil
}

func (r *reporter) sink(id string) (func(gateway.Progress), bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sinks[id]
	return s, ok
}

// TestProgressSinks checks which calls get a progress sink on each face, and that reports
// come before the response and never after it.
func TestProgressSinks(t *testing.T) {
	rep := &reporter{n: 2}
	ts := start(t, baseConfig, map[string]gateway.Target{"report": rep})

	t.Run("websocket", func(t *testing.T) {
		c := dialWS(t, ts, nil)
		wsSend(t, c, `{"jsonrpc":"2.0","method":"report","id":1}`)
		want := []string{
			`{"jsonrpc":"2.0","method":"$/progress","params":{"id":1,"progress":1,"total":2}}`,
			`{"jsonrpc":"2.0","method":"$/progress","params":{"id":1,"progress":2,"total":2}}`,
			`{"jsonrpc":"2.0","result":"done","id":1}`,
		}
		for i, w := range want {
			if got := wsRead(t, c, 5*time.Second); got != w {
				t.Fatalf("message %d: %s; want %s", i, got, w)
			}
		}
		// A report after the response is dropped.
		sink, _ := rep.sink("1")
		sink(gateway.Progress{Progress: 3})
		wsSend(t, c, `{"jsonrpc":"2.0","method":"get_data","id":"marker"}`)
		if got := decodeOne(t, wsRead(t, c, 5*time.Second)); string(got.ID) != `"marker"` {
			t.Fatalf("after the response came %+v; want the marker's response", got)
		}
		// A notification gets no sink; batch members each get their own.
		wsSend(t, c, `{"jsonrpc":"2.0","method":"report"}`)
		wsSend(t, c, `[{"jsonrpc":"2.0","method":"report","id":"a"},{"jsonrpc":"2.0","method":"report","id":"b"}]`)
		var progress []string
		for {
			m := wsRead(t, c, 5*time.Second)
			if strings.HasPrefix(m, "[") {
				break
			}
			progress = append(progress, m)
		}
		if len(progress) != 4 || strings.Count(strings.Join(progress, ""), `"id":"a"`) != 2 {
			t.Fatalf("batch progress %q; want two reports for each member", progress)
		}
		waitFor(t, func() bool { _, ok := rep.sink(""); return ok }) // a notification is not answered
		if s, _ := rep.sink(""); s != nil {
			t.Fatal("a notification was given a progress sink")
		}
	})
	t.Run("http event stream", func(t *testing.T) {
		ct, events := postEvents(t, ts, `{"jsonrpc":"2.0","method":"report","id":"h"}`)
		want := []string{
			`{"jsonrpc":"2.0","method":"$/progress","params":{"id":"h","progress":1,"total":2}}`,
			`{"jsonrpc":"2.0","method":"$/progress","params":{"id":"h","progress":2,"total":2}}`,
			`{"jsonrpc":"2.0","result":"done","id":"h"}`,
		}
		if ct != "text/event-stream" || strings.Join(events, "\n") != strings.Join(want, "\n") {
			t.Fatalf("Content-Type %q, events %q; want %q", ct, events, want)
		}
	})
	t.Run("http without an event stream", func(t *testing.T) {
		if _, _, body := ts.post(`{"jsonrpc":"2.0","method":"report","id":"plain"}`); body != `{"jsonrpc":"2.0","result":"done","id":"plain"}` {
			t.Fatalf("body %s", body)
		}
		if s, ok := rep.sink(`"plain"`); !ok || s != nil {
			t.Fatalf("plain JSON: called %v, sink %v; want a call without sink", ok, s != nil)
		}
		_, body := postEvents(t, ts, `[{"jsonrpc":"2.0","method":"report","id":"m1"}]`)
		if s, ok := rep.sink(`"m1"`); !ok || s != nil || strings.Contains(body[0], "$/progress") {
			t.Fatalf("batch member: called %v, sink %v, body %s; want a call without sink", ok, s != nil, body[0])
		}
	})
}

// TestMCPProgressNeverStallsTheUpstream: a WebSocket client that never reads must not hold
// up the targets reporting progress to it, nor the MCP upstream its calls share with
// others. A flood of large reports fills its socket buffers, so the connection's writer
// blocks (for up to write_timeout, longer than this test) and its send queue fills; then
// its MCP progress call runs, and another caller's call on the same upstream must still
// get every report and its result.
func TestMCPProgressNeverStallsTheUpstream(t *testing.T) {
	flood := &reporter{n: 2000, message: strings.Repeat("y", 16<<10), done: make(chan struct{})} // 32 MiB of reports
	flood2 := &reporter{n: flood.n, message: flood.message, done: make(chan struct{})}
	yaml := withDemoMCP(t, strings.Replace(baseConfig, "websocket: {}", "websocket: {send_queue: 64, write_timeout: 60s}", 1), externalMCP)
	ts := start(t, yaml, map[string]gateway.Target{"flood": flood, "flood2": flood2})

	silent := dialWS(t, ts, nil) // never reads
	wsSend(t, silent, `{"jsonrpc":"2.0","method":"flood","id":"flood"}`)
	select {
	case <-flood.done:
	case <-time.After(20 * time.Second):
		t.Fatal("reporting progress to a client that does not read blocked the target")
	}
	wsSend(t, silent, fmt.Sprintf(progressTool, "silent"))

	// Likewise an HTTP caller that asked for an event stream and does not read it.
	req, err := http.NewRequest(http.MethodPost, ts.base+"/rpc", strings.NewReader(`{"jsonrpc":"2.0","method":"flood2","id":"sse"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	unread, err := http.DefaultClient.Do(req) // returns with the headers, sent with the first report
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unread.Body.Close() }()
	select {
	case <-flood2.done:
	case <-time.After(20 * time.Second):
		t.Fatal("reporting progress to an event stream that is not read blocked the target")
	}

	ct, events := postEvents(t, ts, fmt.Sprintf(progressTool, "other"))
	if ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, body %q", ct, events)
	}
	notes, resp := splitProgress(t, events)
	checkDemoProgress(t, notes, `"other"`)
	checkProgressDone(t, resp)
}
