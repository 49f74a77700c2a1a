package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// sessionConfig routes session RPC to the in-process demo's methods: "calc" to subtract
// (a capability route whose ordinary result the face adapts).
const sessionConfig = `session:
  routes:
    - name: calc
      capability: {method: subtract}
    - name: sum
      capability: {method: sum}
`

type sessionMsg struct {
	ID      string         `json:"id"`
	Type    string         `json:"type"`
	Payload map[string]any `json:"payload"`
}

// TestSessionEndToEnd runs a conversation through the whole server — authentication, the
// call chain, routing, the demo backend — over WebSocket and over HTTP+SSE.
func TestSessionEndToEnd(t *testing.T) {
	ts := start(t, baseConfig+sessionConfig, nil)
	startMsg := `{"id":"rpc_1","type":"chat.start","payload":{"message":"5 minus 3","arguments":{"minuend":5,"subtrahend":3},"sessionId":"s1"}}`
	want := []string{"chat.accepted", "chat.started", "chat.event:tool-call", "chat.event:tool-result", "chat.done"}
	check := func(t *testing.T, got []sessionMsg) {
		t.Helper()
		var types []string
		for _, m := range got {
			s := m.Type
			if m.Type == "chat.event" {
				s += ":" + fmt.Sprint(m.Payload["type"])
			}
			types = append(types, s)
		}
		if fmt.Sprint(types) != fmt.Sprint(want) {
			t.Fatalf("messages %v, want %v", types, want)
		}
		last := got[len(got)-1].Payload
		if last["text"] != "2" || last["taskId"] != got[0].Payload["taskId"] {
			t.Fatalf("chat.done %v", last)
		}
	}
	t.Run("websocket", func(t *testing.T) {
		c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.base, "http")+"/session?route=calc", nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		defer c.Close()
		_ = c.WriteMessage(websocket.TextMessage, []byte(`{"id":"rpc_0","type":"status.get"}`))
		_ = c.WriteMessage(websocket.TextMessage, []byte(startMsg))
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var got []sessionMsg
		for len(got) == 0 || (got[len(got)-1].Type != "chat.done" && got[len(got)-1].Type != "chat.error") {
			var m sessionMsg
			if err := c.ReadJSON(&m); err != nil {
				t.Fatalf("after %v: %v", got, err)
			}
			if m.ID == "rpc_0" {
				if m.Type != "status.result" || fmt.Sprint(m.Payload["routes"]) != "[calc sum]" {
					t.Fatalf("status %v", m)
				}
				continue
			}
			got = append(got, m)
		}
		check(t, got)
	})
	t.Run("sse", func(t *testing.T) {
		resp, err := http.Post(ts.base+"/session/chat?route=calc", "application/json", strings.NewReader(startMsg))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var got []sessionMsg
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m sessionMsg
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					t.Fatal(err)
				}
				got = append(got, m)
			}
		}
		check(t, got)
	})
	t.Run("a failing call", func(t *testing.T) {
		resp, err := http.Post(ts.base+"/session/chat?route=sum", "application/json",
			strings.NewReader(`{"id":"rpc_2","type":"chat.start","payload":{"message":"x","arguments":{"not":"an array"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var last sessionMsg
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				_ = json.Unmarshal([]byte(data), &last)
			}
		}
		d, _ := last.Payload["detail"].(map[string]any)
		if last.Type != "chat.error" || last.Payload["errorId"] != "invalid_params" || d["trace_id"] == nil {
			t.Fatalf("terminal %+v", last)
		}
	})
	t.Run("off", func(t *testing.T) {
		ts := start(t, baseConfig, nil)
		resp, err := http.Post(ts.base+"/session/status", "application/json", strings.NewReader(`{"id":"a","type":"status.get"}`))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

// TestSessionMCPTool runs a capability route on a real MCP server's tool (server-everything
// over stdio): the tool's text content is the conversation's reply.
func TestSessionMCPTool(t *testing.T) {
	everything := npmServer(t, "mcp-server-everything")
	ts := start(t, strings.Replace(baseConfig, "routing:\n  demo: {}\n", fmt.Sprintf(`routing:
  mcp:
    direct_zones: [external]
    servers:
      - name: everything
        stdio: {command: %q, args: [stdio]}
`, everything), 1)+"session:\n  routes:\n    - {name: echo, capability: {method: mcp.echo}}\n", nil)
	var last sessionMsg
	waitFor(t, func() bool {
		resp, err := http.Post(ts.base+"/session/chat", "application/json",
			strings.NewReader(`{"id":"rpc_1","type":"chat.start","payload":{"message":"hello session"}}`))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				_ = json.Unmarshal([]byte(data), &last)
			}
		}
		return last.Type == "chat.done"
	})
	if text, _ := last.Payload["text"].(string); !strings.Contains(text, "hello session") {
		t.Fatalf("chat.done %v", last.Payload)
	}
}
