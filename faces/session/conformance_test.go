package session

import (
	"fmt"
	"strings"
	"testing"
	"time"

	wire "github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
)

// transports opens a client on route over each transport.
var transports = []struct {
	name string
	open func(t *testing.T, e *env, route string) client
}{
	{"websocket", func(t *testing.T, e *env, route string) client {
		c, _, err := e.dialWS("?route="+route, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}},
	{"sse", func(t *testing.T, e *env, route string) client {
		return e.sse("s-"+strings.ReplaceAll(t.Name(), "/", "-"), route)
	}},
}

// TestConformance checks every invariant of the contract over both transports against a
// session target playing scripted frames (well-formed, broken, failing, slow) and against
// a capability route.
func TestConformance(t *testing.T) {
	tests := []struct {
		name, route, message string
		terminal, errorID    string
		events               []string // event types forwarded, in order
		check                func(t *testing.T, r *recorder, ms []msg)
	}{
		{name: "a whole conversation", route: "script", message: "ok", terminal: wire.TypeChatDone,
			events: []string{"status", "reasoning", "tool-call", "tool-output", "tool-result", "text-delta", "text-delta", "usage", "checklist", "from-the-future"},
			check: func(t *testing.T, _ *recorder, ms []msg) {
				last := ms[len(ms)-1]
				if last.field("text") != "hello" || last.field("extra") != "passed" {
					t.Errorf("chat.done lost members: %s", last.Payload)
				}
				for _, m := range ms {
					if m.field("type") == "from-the-future" && !strings.Contains(string(m.Payload), `"extra":{"kept":true}`) {
						t.Errorf("unknown event fields not passed through: %s", m.Payload)
					}
				}
			}},
		{name: "the target's own error", route: "script", message: "tool-error", terminal: wire.TypeChatError, errorID: "model_failed",
			events: []string{"tool-call", "tool-result"}},
		{name: "tool-output naming no tool-call", route: "script", message: "broken", terminal: wire.TypeChatError, errorID: wire.ErrorInvariantBroken,
			events: []string{"text-delta"}},
		{name: "a stream without terminal", route: "script", message: "no-terminal", terminal: wire.TypeChatError, errorID: wire.ErrorInvariantBroken,
			events: []string{"text-delta"}},
		{name: "a frame of an unknown type", route: "script", message: "bad-frame", terminal: wire.TypeChatError, errorID: wire.ErrorInvariantBroken},
		{name: "a frame that is not JSON", route: "script", message: "not-json", terminal: wire.TypeChatError, errorID: wire.ErrorInvariantBroken},
		{name: "a failing backend", route: "script", message: "fail", terminal: wire.TypeChatError, errorID: "unavailable",
			check: func(t *testing.T, _ *recorder, ms []msg) {
				d, _ := ms[len(ms)-1].field("detail").(map[string]any)
				if d["trace_id"] == nil || d["backend"] != "script" || d["code"] != "UNAVAILABLE" {
					t.Errorf("detail %v", d)
				}
			}},
		{name: "a stream that breaks", route: "script", message: "stream-fail", terminal: wire.TypeChatError, errorID: "unavailable",
			events: []string{"status", "reasoning"}},
		{name: "a capability with MCP text", route: "tool", message: "hi", terminal: wire.TypeChatDone,
			events: []string{"tool-call", "status", "status", "tool-result"},
			check: func(t *testing.T, _ *recorder, ms []msg) {
				if got := ms[len(ms)-1].field("text"); got != "echo: hi" {
					t.Errorf("text %v", got)
				}
				for _, m := range ms {
					if m.field("type") == "tool-call" && !strings.Contains(string(m.Payload), `"name":"tool.echo"`) {
						t.Errorf("tool-call %s", m.Payload)
					}
					if m.field("type") == "status" && m.field("status") != "progress" {
						t.Errorf("status %s", m.Payload)
					}
				}
			}},
		{name: "a capability with a JSON result", route: "tool", message: "plain", terminal: wire.TypeChatDone,
			events: []string{"tool-call", "status", "status", "tool-result"},
			check: func(t *testing.T, _ *recorder, ms []msg) {
				if got := ms[len(ms)-1].field("text"); got != `{"sum":3}` {
					t.Errorf("text %v", got)
				}
			}},
		{name: "a failing capability", route: "tool", message: "fail", terminal: wire.TypeChatError, errorID: "tool_failed",
			events: []string{"tool-call", "tool-result"},
			check: func(t *testing.T, _ *recorder, ms []msg) {
				for _, m := range ms {
					if m.field("type") == "tool-result" && m.field("success") != false {
						t.Errorf("tool-result %s", m.Payload)
					}
				}
			}},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			e := newEnv(t, nil)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					c := tr.open(t, e, tt.route)
					defer c.close()
					r := newRecorder(t, c)
					c.send("rpc_1", wire.TypeChatStart, map[string]any{"message": tt.message, "history": []any{}, "options": map[string]any{"x": 1}})
					ms := r.terminal("rpc_1")
					if err := checkRequest(ms); err != nil {
						t.Fatalf("%v:%s", err, r.dump("rpc_1"))
					}
					last := ms[len(ms)-1]
					if last.Type != tt.terminal {
						t.Fatalf("terminal %s, want %s:%s", last.Type, tt.terminal, r.dump("rpc_1"))
					}
					if tt.errorID != "" && last.field("errorId") != tt.errorID {
						t.Fatalf("errorId %v, want %s", last.field("errorId"), tt.errorID)
					}
					var events []string
					for _, m := range ms {
						if m.Type == wire.TypeChatEvent {
							events = append(events, fmt.Sprint(m.field("type")))
						}
					}
					if fmt.Sprint(events) != fmt.Sprint(tt.events) && (len(events) != 0 || len(tt.events) != 0) {
						t.Fatalf("events %v, want %v", events, tt.events)
					}
					if tt.check != nil {
						tt.check(t, r, ms)
					}
				})
			}
			t.Run("abort of the running request reaches the backend", func(t *testing.T) {
				c := tr.open(t, e, "script")
				defer c.close()
				r := newRecorder(t, c)
				msg := "slow-" + tr.name
				c.send("rpc_1", wire.TypeChatStart, map[string]any{"message": msg})
				r.has("rpc_1", wire.TypeChatEvent) // running, inside the target
				c.send("rpc_a", wire.TypeChatAbort, map[string]any{"requestId": "rpc_1"})
				res := r.has("rpc_a", wire.TypeChatAbortResult)
				if res.field("aborted") != true || res.field("state") != wire.StateRunning {
					t.Fatalf("abort result %s", res.Payload)
				}
				ms := r.terminal("rpc_1")
				if err := checkRequest(ms); err != nil || ms[len(ms)-1].field("errorId") != wire.ErrorAborted {
					t.Fatalf("%v:%s", err, r.dump("rpc_1"))
				}
				select {
				case got := <-e.target.cancelled:
					if got != msg {
						t.Fatalf("cancelled %s, want %s", got, msg)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the backend's context was not cancelled")
				}
				c.send("rpc_b", wire.TypeChatAbort, map[string]any{"requestId": "rpc_1"})
				if res := r.has("rpc_b", wire.TypeChatAbortResult); res.field("aborted") != false || res.field("state") != wire.StateAborted {
					t.Fatalf("second abort %s", res.Payload)
				}
			})
			t.Run("queue positions under abort", func(t *testing.T) { queuePositions(t, e, tr.open(t, e, "script")) })
			t.Run("handshake", func(t *testing.T) {
				c := tr.open(t, e, "script")
				defer c.close()
				r := newRecorder(t, c)
				c.send("rpc_s", wire.TypeStatusGet, nil)
				m := r.has("rpc_s", wire.TypeStatusResult)
				if fmt.Sprint(m.field("versions")) != "[1]" || m.field("version") != "1" || !strings.Contains(fmt.Sprint(m.field("features")), "queue") ||
					fmt.Sprint(m.field("routes")) != "[script tool]" {
					t.Fatalf("status.result %s", m.Payload)
				}
			})
			e.waitSettled()
		})
	}
}

// queuePositions: with one running and three queued, aborting queued #1 re-emits the
// others' positions (1, 2); task.status reports them; aborting the running one starts the
// next and re-emits again.
func queuePositions(t *testing.T, e *env, c client) {
	defer c.close()
	r := newRecorder(t, c)
	for i, id := range []string{"A", "B", "C", "D"} {
		c.send(id, wire.TypeChatStart, map[string]any{"message": "slow-q" + id})
		if i == 0 {
			r.has("A", wire.TypeChatStarted)
			continue
		}
		r.has(id, wire.TypeChatQueued, "position", i)
	}
	task := func(id string) string { return r.byID[id][0].field("taskId").(string) }
	c.send("rpc_ab", wire.TypeChatAbort, map[string]any{"requestId": "B"})
	if res := r.has("rpc_ab", wire.TypeChatAbortResult); res.field("aborted") != true || res.field("state") != wire.StateQueued {
		t.Fatalf("abort of a queued request: %s", res.Payload)
	}
	if ms := r.terminal("B"); ms[len(ms)-1].field("errorId") != wire.ErrorAborted || checkRequest(ms) != nil {
		t.Fatalf("B:%s", r.dump("B"))
	}
	r.has("C", wire.TypeChatQueued, "position", 1)
	r.has("D", wire.TypeChatQueued, "position", 2)
	c.send("rpc_t", wire.TypeTaskStatus, map[string]any{"taskId": task("D")})
	if st := r.has("rpc_t", wire.TypeTaskStatusResult); st.field("state") != wire.StateQueued || st.field("position") != 2.0 || st.field("requestId") != "D" {
		t.Fatalf("task.status %s", st.Payload)
	}
	c.send("rpc_t2", wire.TypeTaskStatus, map[string]any{"taskId": task("B")})
	if st := r.has("rpc_t2", wire.TypeTaskStatusResult); st.field("state") != wire.StateAborted {
		t.Fatalf("task.status of B %s", st.Payload)
	}
	c.send("rpc_t3", wire.TypeTaskStatus, map[string]any{"taskId": "task_nope"})
	if m := r.has("rpc_t3", wire.TypeError); m.field("errorId") != wire.ErrorUnknownTask {
		t.Fatalf("unknown task %s", m.Payload)
	}
	c.send("rpc_aa", wire.TypeChatAbort, map[string]any{"requestId": "A"})
	r.terminal("A")
	r.has("C", wire.TypeChatStarted)
	r.has("D", wire.TypeChatQueued, "position", 1)
	for _, id := range []string{"C", "D"} {
		c.send("rpc_x"+id, wire.TypeChatAbort, map[string]any{"requestId": id})
		r.terminal(id)
	}
	for _, id := range []string{"A", "B", "C", "D"} {
		if err := checkRequest(r.byID[id]); err != nil {
			t.Errorf("%s: %v:%s", id, err, r.dump(id))
		}
	}
	// Positions only ever shrink and are re-emitted in order.
	var last float64 = 99
	for _, m := range r.byID["D"] {
		if m.Type == wire.TypeChatQueued {
			p := m.field("position").(float64)
			if p > last {
				t.Errorf("D's position grew: %s", r.dump("D"))
			}
			last = p
		}
	}
	for range 2 { // the two that ran (A, C) saw their cancellations
		select {
		case <-e.target.cancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("a running request's cancellation did not reach its target")
		}
	}
}
