package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestNekteDelegateRefusalStream: a nekte.delegate refused before its stream starts — an
// unknown capability, a task id in use, a context the capability may not receive, the
// task limit — reaches a caller that accepts text/event-stream as a one-event stream: the
// delegate stream's own "error" event {task_id, code, message}, with its headers and
// status 200, and nothing after it. A caller that does not accept event streams keeps the
// JSON-RPC error response; a MessagePack request gets the same event.
func TestNekteDelegateRefusalStream(t *testing.T) {
	ts := startConfig(t, mustParse(t, baseConfig+"nekte: {tasks: {max_per_owner: 1}}\n"), holdTargets())
	g := &nekteGolden{ts: ts}
	delegate := func(id, cp, extra string) string {
		return `{"jsonrpc":"2.0","method":"nekte.delegate","params":{"task":{"id":"` + id + `","desc":"x","timeout_ms":60000,"budget":{"max_tokens":500,"detail_level":"compact"},"cap":"` + cp + `"}` + extra + `},"id":9}`
	}
	held := g.send(t, httpFace, delegate("h-1", "hold", ""))
	held.waitFor(t, `"processed":1`)
	ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.context","params":{"action":"share","envelope":{"id":"prefs","data":{"lang":"en"},"compression":"none","permissions":{"forward":false,"persist":true,"derive":true},"ttl_s":3600,"scope":["subtract"]}},"id":1}`)

	const accept = "text/event-stream"
	tests := []struct {
		name, body, accept, ct string
		code                   int
		taskID                 string
	}{
		{"unknown capability", delegate("e-1", "no_such_capability", ""), accept, "", -32002, "e-1"},
		{"task id in use", delegate("h-1", "hold", ""), accept, "", -32602, "h-1"},
		{"context denied", delegate("e-2", "hold", `,"context":{"id":"prefs"}`), "application/json, " + accept, "", -32005, "e-2"},
		{"task limit", delegate("e-3", "hold", ""), accept + ";q=0.9", "", 5000, "e-3"},
		{"invalid params", `{"jsonrpc":"2.0","method":"nekte.delegate","params":{"task":7},"id":9}`, accept, "", -32602, ""},
		{"msgpack", delegate("e-4", "no_such_capability", ""), accept, "application/x-msgpack", -32002, "e-4"},
		{"no event stream accepted", delegate("e-5", "no_such_capability", ""), "application/json", "", -32002, ""},
		{"no accept header", delegate("e-6", "no_such_capability", ""), "", "", -32002, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			hdr := []string{"Accept", tt.accept}
			if tt.ct != "" {
				body = string(mpFromJSON(t, body))
				hdr = append(hdr, "Content-Type", tt.ct)
			}
			status, h, out := ts.post(body, hdr...)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, out)
			}
			if !strings.Contains(tt.accept, accept) {
				if h.Get("Content-Type") == accept {
					t.Fatalf("an event stream for a caller that does not accept one: %s", out)
				}
				if r := decodeOne(t, out); r.Error == nil || r.Error.Code != tt.code {
					t.Fatalf("response %s, want error %d", out, tt.code)
				}
				return
			}
			for k, want := range map[string]string{"Content-Type": accept, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
				if got := h.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			data, ok := strings.CutPrefix(out, "event: error\ndata: ")
			if !ok || !strings.HasSuffix(data, "}\n\n") || strings.Count(out, "\n") != 3 {
				t.Fatalf("stream %q, want one error event", out)
			}
			var ev struct {
				TaskID  *string `json:"task_id"`
				Code    int     `json:"code"`
				Message string  `json:"message"`
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("event data %q: %v", data, err)
			}
			if ev.Code != tt.code || ev.Message == "" {
				t.Fatalf("event %s, want code %d and a message", data, tt.code)
			}
			if tt.taskID == "" && ev.TaskID != nil || tt.taskID != "" && (ev.TaskID == nil || *ev.TaskID != tt.taskID) {
				t.Fatalf("event %s, want task_id %q", data, tt.taskID)
			}
		})
	}
	if m := result(t, ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.task.cancel","params":{"task_id":"h-1"},"id":3}`)); m["status"] != "cancelled" {
		t.Fatalf("cancel: %v", m)
	}
	held.wait(t)
}
