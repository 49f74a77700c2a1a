package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// unitsMCPEnv makes this test binary serve the units MCP server over stdio (see
// TestUnitsMCPProcess).
const unitsMCPEnv = "GATEHOUSE_TEST_UNITS_MCP"

// TestUnitsMCPProcess is not a test of its own: TestNekteSchemaChange runs this binary
// with unitsMCPEnv set as a stdio MCP upstream. Its tool convert turns Celsius into
// Fahrenheit; calling reshape replaces convert with one that needs a scale too, and
// mcp-go tells the sessions with notifications/tools/list_changed.
func TestUnitsMCPProcess(t *testing.T) {
	if os.Getenv(unitsMCPEnv) != "1" {
		t.Skip("the stdio MCP upstream of TestNekteSchemaChange; runs only as its child process")
	}
	s := mcpserver.NewMCPServer("units", "1.0.0", mcpserver.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("convert", mcp.WithDescription("Converts a temperature from Celsius to Fahrenheit"),
		mcp.WithNumber("celsius", mcp.Required())),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(fmt.Sprintf("%g F", r.GetFloat("celsius", 0)*9/5+32)), nil
		})
	s.AddTool(mcp.NewTool("reshape", mcp.WithDescription("Makes convert ask for the scale to convert to")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.AddTool(mcp.NewTool("convert", mcp.WithDescription("Converts a temperature from Celsius to the scale asked for"),
				mcp.WithNumber("celsius", mcp.Required()), mcp.WithString("scale", mcp.Required(), mcp.Enum("F", "K"))),
				func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					c := r.GetFloat("celsius", 0)
					if r.GetString("scale", "") == "K" {
						return mcp.NewToolResultText(fmt.Sprintf("%g K", c+273.15)), nil
					}
					return mcp.NewToolResultText(fmt.Sprintf("%g F", c*9/5+32)), nil
				})
			return mcp.NewToolResultText("reshaped"), nil
		})
	if err := mcpserver.NewStdioServer(s).Listen(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// withMCPServer returns yaml (baseConfig or a variant) with one bridged MCP server named
// name, run over stdio as command with args, instead of the demo routing.
func withMCPServer(t *testing.T, yaml, name, command string, args []string, env map[string]string) string {
	t.Helper()
	a, _ := json.Marshal(args)
	e, _ := json.Marshal(env)
	section := fmt.Sprintf("routing:\n  demo: {}\n  mcp:\n    servers:\n      - name: %s\n        stdio: {command: %q, args: %s, env: %s}\n", name, command, a, e)
	if !strings.Contains(yaml, "routing:\n  demo: {}\n") {
		t.Fatal("the configuration has no routing section to replace")
	}
	return strings.Replace(yaml, "routing:\n  demo: {}\n", section, 1)
}

// capHash returns the h of capability id at level 0, "" while it is not in the catalog.
func capHash(t *testing.T, ts *testServer, id string) string {
	t.Helper()
	var res struct {
		Caps []struct{ ID, H string } `json:"caps"`
	}
	r := ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.discover","params":{"level":0,"filter":{"id":"`+id+`"}},"id":"h"}`)
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
		t.Fatalf("discover: %+v %s", r.Error, r.Result)
	}
	if len(res.Caps) == 0 {
		return ""
	}
	return res.Caps[0].H
}

// TestNekteSchemaChange runs the progressive-discovery flow of an agent against a real MCP
// upstream whose tool changes under it: discover L0 → L1 → L2, invoke with h, the
// upstream changes the tool's schema (tools/list_changed), the old h gets VERSION_MISMATCH
// with the current hash and the new L2 entry in one round trip, and the call succeeds
// again without h (as the reference client retries) and with the new h.
func TestNekteSchemaChange(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ts := start(t, withMCPServer(t, nekteOn, "units", self, []string{"-test.run=^TestUnitsMCPProcess$"}, map[string]string{unitsMCPEnv: "1"}), nil)
	var h0 string
	waitFor(t, func() bool { h0 = capHash(t, ts, "convert"); return h0 != "" })

	l1 := result(t, ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.discover","params":{"level":1,"filter":{"category":"units"}},"id":1}`))
	if caps := l1["caps"].([]any); len(caps) != 2 || caps[0].(map[string]any)["desc"] != "Converts a temperature from Celsius to Fahrenheit" {
		t.Fatalf("L1: %v", l1)
	}
	l2 := result(t, ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.discover","params":{"level":2,"filter":{"id":"convert"}},"id":2}`))
	entry := l2["caps"].([]any)[0].(map[string]any)
	if entry["h"] != h0 || !strings.Contains(fmt.Sprint(entry["input"]), "celsius") {
		t.Fatalf("L2: %v", entry)
	}
	invoke := func(h, in string) response {
		hp := ""
		if h != "" {
			hp = `"h":"` + h + `",`
		}
		return ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.invoke","params":{"cap":"convert",`+hp+`"in":`+in+`,"budget":{"max_tokens":50,"detail_level":"minimal"}},"id":3}`)
	}
	if m := result(t, invoke(h0, `{"celsius":100}`)); m["out"] != "212 F" {
		t.Fatalf("invoke with h: %v", m)
	}

	result(t, ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.invoke","params":{"cap":"reshape","in":{}},"id":4}`))
	var h1 string
	waitFor(t, func() bool { h1 = capHash(t, ts, "convert"); return h1 != h0 })

	r := invoke(h0, `{"celsius":100,"scale":"K"}`)
	if r.Error == nil || r.Error.Code != -32001 || r.Error.Message != "VERSION_MISMATCH" || r.Error.Data["current_hash"] != h1 {
		t.Fatalf("invoke with the old h: %+v", r.Error)
	}
	schema, _ := r.Error.Data["schema"].(map[string]any)
	if schema["id"] != "convert" || schema["h"] != h1 || !strings.Contains(fmt.Sprint(schema["input"]), "scale") {
		t.Fatalf("data.schema: %v", schema)
	}
	// The reference client caches data.schema and retries without h.
	if r := invoke("", `{"celsius":100}`); r.Error == nil || r.Error.Code != -32602 || r.Error.Data["path"] != "in.scale" {
		t.Fatalf("the old input against the new schema: %+v", r.Error)
	}
	if m := result(t, invoke("", `{"celsius":100,"scale":"K"}`)); m["out"] != "373.15 K" {
		t.Fatalf("retry without h: %v", m)
	}
	if m := result(t, invoke(h1, `{"celsius":0,"scale":"F"}`)); m["out"] != "32 F" {
		t.Fatalf("invoke with the new h: %v", m)
	}
}

// everything starts a gateway with NEKTE bridging the real server-everything (npm), whose
// standard input is copied to a file (tee), so the test sees what the upstream received.
func everything(t *testing.T) (*nekteGolden, func() string) {
	t.Helper()
	bin := npmServer(t, "mcp-server-everything")
	input := filepath.Join(t.TempDir(), "upstream-stdin.jsonl")
	yaml := withMCPServer(t, nekteOn, "everything", "sh", []string{"-c", `tee -a "$0" | "$1" stdio`, input, bin}, map[string]string{})
	g := &nekteGolden{ts: start(t, yaml, nil)}
	waitFor(t, func() bool { return capHash(t, g.ts, longOp) != "" })
	return g, func() string {
		b, err := os.ReadFile(input)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

const longOp = "trigger-long-running-operation"

// delegateLongOp is nekte.delegate of trigger-long-running-operation.
func delegateLongOp(id string, timeoutMs, duration, steps int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"nekte.delegate","params":{"task":{"id":%q,"desc":"long operation","timeout_ms":%d,"budget":{"max_tokens":500,"detail_level":"compact"},"cap":%q,"in":{"duration":%d,"steps":%d}}},"id":1}`,
		id, timeoutMs, longOp, duration, steps)
}

// sseFrames writes the SSE body of events, each a name and its data.
func sseFrames(events ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(events); i += 2 {
		b.WriteString("event: " + events[i] + "\ndata: " + events[i+1] + "\n\n")
	}
	return b.String()
}

// progressFrames returns the progress events from..to of total.
func progressFrames(from, to, total int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, "progress", fmt.Sprintf(`{"processed":%d,"total":%d}`, i, total))
	}
	return out
}

func statusFrame(id, from, to, reason string) []string {
	if reason != "" {
		return []string{"status_change", fmt.Sprintf(`{"task_id":%q,"from":%q,"to":%q,"reason":%q}`, id, from, to, reason)}
	}
	return []string{"status_change", fmt.Sprintf(`{"task_id":%q,"from":%q,"to":%q}`, id, from, to)}
}

func frames(parts ...[]string) string {
	var all []string
	for _, p := range parts {
		all = append(all, p...)
	}
	return sseFrames(all...)
}

// callIDs returns the ids of the tools/call requests of trigger-long-running-operation
// with the given duration that the upstream received, and the request ids of the
// notifications/cancelled it received.
func callIDs(t *testing.T, input string, duration int) (calls, cancelled []string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(input))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments map[string]any  `json:"arguments"`
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Method == "tools/call" && m.Params.Name == longOp && m.Params.Arguments["duration"] == float64(duration):
			calls = append(calls, string(m.ID))
		case m.Method == "notifications/cancelled":
			cancelled = append(cancelled, string(m.Params.RequestID))
		}
	}
	return calls, cancelled
}

// checkCancelledUpstream waits until the upstream has received notifications/cancelled for
// every call of the operation with duration.
func checkCancelledUpstream(t *testing.T, input func() string, duration int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		calls, cancelled := callIDs(t, input(), duration)
		ok := len(calls) > 0
		for _, c := range calls {
			ok = ok && slices.Contains(cancelled, c)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream received calls %v of duration %d and cancellations %v", calls, duration, cancelled)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNekteDelegateLongRunningMCPTool delegates server-everything's
// trigger-long-running-operation (a real MCP server from npm) through the gateway and
// checks the task's whole life on the wire: progress in order then complete, in the
// exact SSE framing; a cancel mid-way that reaches the upstream as
// notifications/cancelled; suspend and resume from the checkpoint; timeout_ms; and a late
// subscriber re-attaching with nekte.task.stream.
func TestNekteDelegateLongRunningMCPTool(t *testing.T) {
	g, upstreamInput := everything(t)
	done := func(id, text string, tokens int) []string {
		return []string{"complete", fmt.Sprintf(`{"task_id":%q,"status":"completed","out":{"minimal":%q,"compact":{"text":%q}},"meta":{"tokens_used":%d}}`, id, text, text, tokens)}
	}
	check := func(t *testing.T, what string, got goldenResult, want string) {
		t.Helper()
		if body := strings.TrimSuffix(nekteNormalize(got.body), "\n"); !got.stream || body != want {
			t.Fatalf("%s:\n%s\nwant\n%s", what, body, want)
		}
	}

	t.Run("progress then complete", func(t *testing.T) {
		got := g.send(t, httpFace, delegateLongOp("ev-progress", 30000, 1, 4)).wait(t)
		check(t, "the stream", got, frames(
			statusFrame("ev-progress", "pending", "accepted", ""), statusFrame("ev-progress", "accepted", "running", ""),
			progressFrames(1, 4, 4),
			statusFrame("ev-progress", "running", "completed", ""),
			done("ev-progress", "Long running operation completed. Duration: 1 seconds, Steps: 4.", 40)))
	})

	t.Run("cancel mid-way", func(t *testing.T) {
		stream := g.send(t, httpFace, delegateLongOp("ev-cancel", 60000, 30, 30))
		stream.waitFor(t, `"processed":1,`)
		if m := result(t, g.ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.task.cancel","params":{"task_id":"ev-cancel","reason":"changed my mind"},"id":2}`)); m["status"] != "cancelled" || m["previous_status"] != "running" {
			t.Fatalf("cancel: %v", m)
		}
		got := stream.wait(t)
		check(t, "the stream", got, frames(
			statusFrame("ev-cancel", "pending", "accepted", ""), statusFrame("ev-cancel", "accepted", "running", ""),
			progressFrames(1, 1, 30),
			statusFrame("ev-cancel", "running", "cancelled", "changed my mind"),
			[]string{"cancelled", `{"task_id":"ev-cancel","reason":"changed my mind","previous_status":"running"}`}))
		checkCancelledUpstream(t, upstreamInput, 30)
		// The call is over for the gateway: no later report reaches the task.
		time.Sleep(2500 * time.Millisecond)
		m := result(t, g.ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.task.status","params":{"task_id":"ev-cancel"},"id":3}`))
		if m["status"] != "cancelled" || fmt.Sprint(m["progress"]) != "map[processed:1 total:30]" {
			t.Fatalf("status after the cancel: %v", m)
		}
	})

	t.Run("suspend and resume", func(t *testing.T) {
		stream := g.send(t, httpFace, delegateLongOp("ev-suspend", 60000, 4, 4))
		stream.waitFor(t, `"processed":1,`)
		if m := result(t, g.ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.task.suspend","params":{"task_id":"ev-suspend"},"id":2}`)); m["status"] != "suspended" {
			t.Fatalf("suspend: %v", m)
		}
		checkCancelledUpstream(t, upstreamInput, 4) // suspending stops the upstream call
		m := result(t, g.ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.task.status","params":{"task_id":"ev-suspend"},"id":3}`))
		if m["status"] != "suspended" || m["checkpoint_available"] != true || fmt.Sprint(m["progress"]) != "map[processed:1 total:4]" {
			t.Fatalf("status while suspended: %v", m)
		}
		if m := result(t, g.ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.task.resume","params":{"task_id":"ev-suspend"},"id":4}`)); m["status"] != "running" || m["previous_status"] != "suspended" {
			t.Fatalf("resume: %v", m)
		}
		got := stream.wait(t)
		check(t, "the stream", got, frames(
			statusFrame("ev-suspend", "pending", "accepted", ""), statusFrame("ev-suspend", "accepted", "running", ""),
			progressFrames(1, 1, 4),
			statusFrame("ev-suspend", "running", "suspended", "suspended by the caller"),
			[]string{"suspended", `{"task_id":"ev-suspend","checkpoint_available":true}`},
			statusFrame("ev-suspend", "suspended", "running", "resumed"),
			[]string{"resumed", `{"task_id":"ev-suspend","from_checkpoint":true}`},
			progressFrames(1, 4, 4), // server-everything starts over: it cannot continue from a checkpoint
			statusFrame("ev-suspend", "running", "completed", ""),
			done("ev-suspend", "Long running operation completed. Duration: 4 seconds, Steps: 4.", 40)))
		if calls, _ := callIDs(t, upstreamInput(), 4); len(calls) != 2 {
			t.Fatalf("the upstream got %d calls; want the first run and the resumed one", len(calls))
		}
	})

	t.Run("timeout", func(t *testing.T) {
		got := g.send(t, httpFace, delegateLongOp("ev-timeout", 1200, 20, 4)).wait(t)
		msg := "Task timed out: ev-timeout after 1200 ms"
		check(t, "the stream", got, frames(
			statusFrame("ev-timeout", "pending", "accepted", ""), statusFrame("ev-timeout", "accepted", "running", ""),
			statusFrame("ev-timeout", "running", "failed", msg),
			[]string{"error", fmt.Sprintf(`{"task_id":"ev-timeout","code":-32006,"message":%q}`, msg)}))
		checkCancelledUpstream(t, upstreamInput, 20)
	})

	t.Run("re-attach", func(t *testing.T) {
		first := g.send(t, httpFace, delegateLongOp("ev-attach", 30000, 2, 4))
		first.waitFor(t, `"processed":1,`)
		late := g.send(t, httpFace, `{"jsonrpc":"2.0","method":"nekte.task.stream","params":{"task_id":"ev-attach"},"id":2}`).wait(t)
		want := frames(
			statusFrame("ev-attach", "pending", "accepted", ""), statusFrame("ev-attach", "accepted", "running", ""),
			progressFrames(1, 4, 4),
			statusFrame("ev-attach", "running", "completed", ""),
			done("ev-attach", "Long running operation completed. Duration: 2 seconds, Steps: 4.", 40))
		check(t, "the late subscriber's stream", late, want)
		check(t, "the delegate stream", first.wait(t), want)
	})
}
