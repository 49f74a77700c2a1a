package server

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/tools/txtar"
)

// sessionGoldenDir holds the golden session RPC exchanges; TestGolden's JSON-RPC replay
// leaves it out (jsonrpcGoldenFiles).
const sessionGoldenDir = "testdata/session"

// jsonrpcGoldenFiles are the golden files of the JSON-RPC faces: testdata/*/*.txtar but
// the session RPC and A2A ones.
func jsonrpcGoldenFiles() []string {
	files, _ := filepath.Glob("testdata/*/*.txtar")
	out := files[:0]
	for _, f := range files {
		if d := filepath.Dir(filepath.ToSlash(f)); d != sessionGoldenDir && d != a2aGoldenDir {
			out = append(out, f)
		}
	}
	return out
}

// sessionGoldenConfig: routes on the in-process demo, whose answers are deterministic.
const sessionGoldenConfig = `
session:
  max_message_bytes: 512
  routes:
    - name: calc
      capability: {method: subtract}
    - name: sum
      capability: {method: sum}
`

var (
	sessionTaskRE  = regexp.MustCompile(`task_[0-9a-f]+_[0-9]+`)
	sessionTraceRE = regexp.MustCompile(`"trace_id":"[0-9a-f]{32}"`)
)

// normalizeSession replaces task and trace ids, which differ from run to run.
func normalizeSession(msgs []string) string {
	if len(msgs) == 0 {
		return ""
	}
	out := strings.Join(msgs, "\n") + "\n"
	out = sessionTaskRE.ReplaceAllString(out, "task_T")
	return sessionTraceRE.ReplaceAllString(out, `"trace_id":"TRACE"`)
}

// TestSessionGolden replays testdata/session/*.txtar: each N.send is one client message
// (N.route the route, default the first), N.golden every message the gateway answers it
// with, in order, until the last one about it (chat.done or chat.error for chat.start,
// the answer of any other), task and trace ids normalized (rewritten by -update). Each
// file is replayed over one WebSocket connection and over HTTP+SSE; both must give the
// golden messages.
func TestSessionGolden(t *testing.T) {
	files, _ := filepath.Glob(sessionGoldenDir + "/*.txtar")
	if len(files) == 0 {
		t.Fatal("no session golden files")
	}
	ts := start(t, baseConfig+sessionGoldenConfig, nil)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sections := map[string]string{}
			for _, f := range ar.Files {
				sections[f.Name] = string(f.Data)
			}
			conns := map[string]*websocket.Conn{}
			for n := 1; ; n++ {
				key := strconv.Itoa(n)
				send, ok := sections[key+".send"]
				if !ok {
					if n == 1 {
						t.Fatal("no exchanges")
					}
					break
				}
				send = strings.TrimSpace(send)
				route := strings.TrimSpace(sections[key+".route"])
				c := conns[route]
				if c == nil {
					c = dialSessionRoute(t, ts, route)
					conns[route] = c
				}
				ws := normalizeSession(sessionWSExchange(t, c, send))
				sse := normalizeSession(sessionSSEExchange(t, ts, route, send))
				if *update {
					setSection(ar, key+".golden", ws)
				} else if want := sections[key+".golden"]; ws != want {
					t.Errorf("exchange %d over WebSocket:\n got %s\nwant %s", n, ws, want)
				}
				if want := sections[key+".golden"]; !*update && sse != want {
					t.Errorf("exchange %d over HTTP+SSE:\n got %s\nwant %s", n, sse, want)
				}
			}
			if *update {
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func dialSessionRoute(t *testing.T, ts *testServer, route string) *websocket.Conn {
	t.Helper()
	url := "ws" + strings.TrimPrefix(ts.base, "http") + "/session"
	if route != "" {
		url += "?route=" + route
	}
	c, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// lastAbout reports whether msg is the last message answering send: a chat.start's
// chat.done or chat.error, any other message's answer (or an envelope error).
func lastAbout(send, msg string) bool {
	var m struct{ Type string }
	_ = json.Unmarshal([]byte(msg), &m)
	switch m.Type {
	case "chat.accepted", "chat.queued", "chat.started", "chat.event":
		return false
	}
	return true
}

func sessionWSExchange(t *testing.T, c *websocket.Conn, send string) []string {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(send)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, msg, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("after %v: %v", out, err)
		}
		out = append(out, string(msg))
		if lastAbout(send, string(msg)) {
			return out
		}
	}
}

// sessionSSEExchange posts send to the HTTP endpoint of its type (an unreadable one to
// /session/chat) and returns the messages answered: the event stream's data lines, or
// the JSON body.
func sessionSSEExchange(t *testing.T, ts *testServer, route, send string) []string {
	t.Helper()
	var m struct{ Type string }
	_ = json.Unmarshal([]byte(send), &m)
	path := map[string]string{"status.get": "/session/status", "chat.abort": "/session/abort", "task.status": "/session/task"}[m.Type]
	if path == "" {
		path = "/session/chat"
	}
	url := ts.base + path
	if route != "" {
		url += "?route=" + route
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(send))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []string
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var raw json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
			t.Fatalf("%s: %d, %v", path, resp.StatusCode, err)
		}
		return append(out, string(raw))
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, data)
		}
	}
	return out
}
