package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/demo"
)

// sessionBackendsConfig routes session RPC to every kind of backend: an upstream agent
// server speaking the contract (demo-chat) over WebSocket and over HTTP+SSE, a gRPC
// server-streaming method (the calculator's Count), a gRPC unary method and an agent-link
// operator (the reference agent's sleep) as capabilities.
const sessionBackendsConfig = `
agents:
  heartbeat_interval: 1s
  auth: {allow_loopback_anonymous: true}
session:
  max_queued: 4
  routes:
    - name: chat
      upstream: {url: "ws://%[1]s/session"}
    - name: chatsse
      upstream: {url: "http://%[1]s"}
    - name: count
      grpc:
        method: calc.count
        request:
          from: {value: 1}
          to: {from: options.to, default: 5}
          interval: {from: options.interval}
        events:
          - {type: text-delta, templates: {text: "{value} "}}
          - {type: status, every: 2, templates: {message: "at {value}"}}
        done: {text: true}
    - name: calc
      capability: {method: calc.subtract}
    - name: sleep
      capability: {method: agent.sleep}
`

// sessionKind is one backend kind: its route, a payload that completes, one that runs
// long enough to be aborted or to hold the queue, and what a completed reply must show.
type sessionKind struct {
	route      string
	quick      string
	slow       string
	wantEvents []string // event types the completed reply contains, in order of first appearance
	wantText   string   // a substring of chat.done's text
}

var sessionKinds = []sessionKind{
	{"chat", `{"message":"hello"}`, `{"message":"slow","options":{"repeat":4000}}`,
		[]string{"status", "reasoning", "tool-call", "tool-output", "tool-result", "text-delta", "usage", "checklist"}, "hello"},
	{"chatsse", `{"message":"hello"}`, `{"message":"slow","options":{"repeat":4000}}`,
		[]string{"status", "reasoning", "tool-call", "tool-output", "tool-result", "text-delta", "usage", "checklist"}, "hello"},
	{"count", `{"message":"count","options":{"to":4}}`, `{"message":"count","options":{"to":1000,"interval":"0.02s"}}`,
		[]string{"text-delta", "status"}, "1 2 3 4 "},
	{"calc", `{"message":"42-23","arguments":{"minuend":42,"subtrahend":23}}`, "",
		[]string{"tool-call", "tool-result"}, "19"},
	{"sleep", `{"message":"nap","arguments":{"ms":20,"steps":2}}`, `{"message":"nap","arguments":{"ms":30000,"steps":100}}`,
		[]string{"tool-call", "status", "tool-result"}, "slept_ms"},
}

// sessionClient speaks session RPC over one transport: send writes a client envelope,
// next returns the next server message (of any request), with a deadline.
type sessionClient interface {
	send(t *testing.T, env string)
	next(t *testing.T) sessionMsg
	close()
}

// wsSession is a WebSocket connection to /session.
type wsSession struct {
	c   *websocket.Conn
	msg chan sessionMsg
}

func dialSession(t *testing.T, base, route string) *wsSession {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/session?route="+route, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	s := &wsSession{c: c, msg: make(chan sessionMsg, 4096)}
	go func() {
		defer close(s.msg)
		for {
			var m sessionMsg
			if err := c.ReadJSON(&m); err != nil {
				return
			}
			s.msg <- m
		}
	}()
	return s
}

func (s *wsSession) send(t *testing.T, env string) {
	t.Helper()
	if err := s.c.WriteMessage(websocket.TextMessage, []byte(env)); err != nil {
		t.Fatal(err)
	}
}

func (s *wsSession) next(t *testing.T) sessionMsg { return nextMsg(t, s.msg) }
func (s *wsSession) close()                       { _ = s.c.Close() }

// sseSession is an HTTP+SSE session: each chat.start is a POST /session/chat whose event
// stream feeds msg; abort, status and task answers are POSTs whose JSON feeds msg too.
type sseSession struct {
	base, route string
	msg         chan sessionMsg
	wg          sync.WaitGroup
	ctx         context.Context
	cancel      context.CancelFunc
}

func newSSESession(base, route string) *sseSession {
	ctx, cancel := context.WithCancel(context.Background())
	return &sseSession{base: base, route: route, msg: make(chan sessionMsg, 4096), ctx: ctx, cancel: cancel}
}

func (s *sseSession) send(t *testing.T, env string) {
	t.Helper()
	var e struct{ Type string }
	_ = json.Unmarshal([]byte(env), &e)
	path := map[string]string{"chat.start": "/session/chat", "chat.abort": "/session/abort",
		"status.get": "/session/status", "task.status": "/session/task"}[e.Type]
	req, _ := http.NewRequestWithContext(s.ctx, http.MethodPost, s.base+path+"?route="+s.route, strings.NewReader(env))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if e.Type != "chat.start" {
		defer resp.Body.Close()
		var m sessionMsg
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatalf("%s: %d, %v", path, resp.StatusCode, err)
		}
		s.msg <- m
		return
	}
	s.wg.Go(func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m sessionMsg
				if json.Unmarshal([]byte(data), &m) == nil {
					s.msg <- m
				}
			}
		}
	})
}

func (s *sseSession) next(t *testing.T) sessionMsg { return nextMsg(t, s.msg) }
func (s *sseSession) close()                       { s.cancel(); s.wg.Wait() }

func nextMsg(t *testing.T, ch <-chan sessionMsg) sessionMsg {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatal("the connection ended")
		}
		return m
	case <-time.After(20 * time.Second):
		t.Fatal("no message within 20s")
	}
	return sessionMsg{}
}

// sessionRequest collects one request's messages and checks the contract as they come:
// accepted first with a task id, frames that pass the Checker, exactly one terminal.
type sessionRequest struct {
	id, taskID string
	types      []string // message types, chat.event as chat.event:<type>
	events     []string // event types, first appearance order
	positions  []int    // chat.queued positions, in order
	terminal   sessionMsg
	check      sessionrpc.Checker
}

func (r *sessionRequest) add(t *testing.T, m sessionMsg) {
	t.Helper()
	if r.terminal.Type != "" {
		t.Fatalf("%s: %s after the terminal %s", r.id, m.Type, r.terminal.Type)
	}
	kind := m.Type
	switch m.Type {
	case "chat.accepted":
		if len(r.types) != 0 {
			t.Fatalf("%s: chat.accepted after %v", r.id, r.types)
		}
		r.taskID, _ = m.Payload["taskId"].(string)
		if !strings.HasPrefix(r.taskID, "task_") {
			t.Fatalf("%s: task id %q", r.id, r.taskID)
		}
	case "chat.queued":
		pos, _ := m.Payload["position"].(float64)
		r.positions = append(r.positions, int(pos))
	case "chat.event", "chat.done", "chat.error":
		raw, _ := json.Marshal(m.Payload)
		terminal, err := r.check.Check(sessionrpc.Frame{Type: m.Type, Payload: raw})
		if err != nil {
			t.Fatalf("%s: %s breaks the contract: %v", r.id, raw, err)
		}
		if m.Type == "chat.event" {
			et, _ := m.Payload["type"].(string)
			kind += ":" + et
			if !slices.Contains(r.events, et) {
				r.events = append(r.events, et)
			}
		}
		if terminal {
			if m.Payload["taskId"] != r.taskID {
				t.Fatalf("%s: terminal task id %v, accepted %s", r.id, m.Payload["taskId"], r.taskID)
			}
			r.terminal = m
		}
	}
	r.types = append(r.types, kind)
}

// pump reads messages into reqs until stop says so; messages for requests not in reqs,
// or of no request, fail the test unless they answer an id in extra.
func pump(t *testing.T, c sessionClient, reqs map[string]*sessionRequest, stop func() bool) {
	t.Helper()
	for !stop() {
		m := c.next(t)
		r, ok := reqs[m.ID]
		if !ok {
			t.Fatalf("a message for no request: %+v", m)
		}
		r.add(t, m)
	}
}

// TestSessionConformanceAcrossBackends checks the contract through the whole server
// against every kind of backend, over WebSocket and HTTP+SSE: a completed conversation
// (the contract's invariants on every message), abort of the running request reaching the
// backend, and queue positions under abort.
func TestSessionConformanceAcrossBackends(t *testing.T) {
	chat, err := demo.NewChat(t.Context(), demo.ChatOptions{Delay: 5 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(chat.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = chat.Serve(t.Context(), ln) }()
	addr, stopCalc, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stopCalc() })
	ts := start(t, fmt.Sprintf(calcConfig, addr)+fmt.Sprintf(sessionBackendsConfig, ln.Addr()), nil)
	ts.waitReadyWithin(20 * time.Second)
	agentCtx, stopAgent := context.WithCancel(context.Background())
	agentDone := make(chan struct{})
	go func() {
		defer close(agentDone)
		_ = demo.RunAgent(agentCtx, demo.AgentOptions{Addr: ts.InternalAddr().String(), ID: "sleeper", MaxConcurrent: 8,
			Reconnect: true, Logger: slog.New(slog.DiscardHandler)})
	}()
	t.Cleanup(func() { stopAgent(); <-agentDone })
	waitFor(t, func() bool { return len(ts.agents.Agents()) == 1 })

	transports := []struct {
		name string
		dial func(route string) sessionClient
	}{
		{"websocket", func(route string) sessionClient { return dialSession(t, ts.base, route) }},
		{"sse", func(route string) sessionClient { return newSSESession(ts.base, route) }},
	}
	for _, tr := range transports {
		for _, k := range sessionKinds {
			t.Run(tr.name+"/"+k.route, func(t *testing.T) {
				t.Run("conversation", func(t *testing.T) {
					c := tr.dial(k.route)
					defer c.close()
					r := &sessionRequest{id: "rpc_1"}
					c.send(t, `{"id":"rpc_1","type":"chat.start","payload":`+k.quick+`}`)
					pump(t, c, map[string]*sessionRequest{"rpc_1": r}, func() bool { return r.terminal.Type != "" })
					if r.terminal.Type != "chat.done" {
						t.Fatalf("ended with %+v after %v", r.terminal, r.types)
					}
					if r.types[1] != "chat.started" {
						t.Fatalf("messages %v: chat.started is not second", r.types)
					}
					for _, want := range k.wantEvents {
						if !slices.Contains(r.events, want) {
							t.Errorf("events %v lack %s", r.events, want)
						}
					}
					if text, _ := json.Marshal(r.terminal.Payload); !strings.Contains(string(text), k.wantText) {
						t.Errorf("chat.done %s lacks %q", text, k.wantText)
					}
				})
				if k.slow == "" {
					return
				}
				t.Run("abort and queue", func(t *testing.T) {
					before := chat.Stats()
					sessionID := tr.name + "-" + k.route
					c := tr.dial(k.route)
					defer c.close()
					reqs := map[string]*sessionRequest{}
					for i := 1; i <= 4; i++ {
						id := fmt.Sprintf("rpc_%d", i)
						reqs[id] = &sessionRequest{id: id}
						payload := k.slow
						if i > 1 {
							payload = k.quick
						}
						c.send(t, `{"id":"`+id+`","type":"chat.start","payload":`+withSession(payload, sessionID)+`}`)
						// One at a time: the first is running (it has sent an event) before the
						// others queue, each queued before the next is sent (HTTP+SSE requests
						// are concurrent: their order would be the server's choice).
						r := reqs[id]
						pump(t, c, reqs, func() bool { return len(r.events) > 0 || len(r.positions) > 0 })
						if want := i - 1; i > 1 && (len(r.positions) != 1 || r.positions[0] != want) {
							t.Fatalf("%s positions %v, want [%d]", id, r.positions, want)
						}
					}
					// Abort the first queued request: the others move up, and are told.
					reqs["abort_2"] = &sessionRequest{id: "abort_2"}
					c.send(t, `{"id":"abort_2","type":"chat.abort","payload":{"requestId":"rpc_2","sessionId":"`+sessionID+`"}}`)
					pump(t, c, reqs, func() bool {
						return reqs["rpc_2"].terminal.Type != "" && last(reqs["rpc_3"].positions) == 1 && last(reqs["rpc_4"].positions) == 2
					})
					if e := reqs["rpc_2"].terminal; e.Type != "chat.error" || e.Payload["errorId"] != "aborted" {
						t.Fatalf("aborted queued request ended %+v", e)
					}
					// Abort the running request: its backend work stops, and the queue runs.
					reqs["abort_1"] = &sessionRequest{id: "abort_1"}
					c.send(t, `{"id":"abort_1","type":"chat.abort","payload":{"requestId":"rpc_1","sessionId":"`+sessionID+`"}}`)
					pump(t, c, reqs, func() bool {
						return reqs["rpc_1"].terminal.Type != "" && reqs["rpc_3"].terminal.Type != "" && reqs["rpc_4"].terminal.Type != ""
					})
					if e := reqs["rpc_1"].terminal; e.Type != "chat.error" || e.Payload["errorId"] != "aborted" {
						t.Fatalf("aborted running request ended %+v", e)
					}
					for _, id := range []string{"rpc_3", "rpc_4"} {
						if reqs[id].terminal.Type != "chat.done" {
							t.Errorf("%s ended %+v", id, reqs[id].terminal)
						}
					}
					switch k.route {
					case "chat", "chatsse": // the upstream saw the abort of the request it ran
						waitFor(t, func() bool { return chat.Stats().Aborted > before.Aborted })
					case "sleep": // the agent's task was cancelled, not left to run its 30 s
						waitFor(t, func() bool { a := ts.agents.Agents(); return len(a) == 1 && a[0].Outstanding == 0 })
					}
				})
			})
		}
	}
}

// withSession puts sessionId id in a chat.start payload: the queue of an HTTP+SSE session
// belongs to its session id (WebSocket ignores it: the queue is the connection's).
func withSession(payload, id string) string {
	return strings.Replace(payload, "{", `{"sessionId":"`+id+`",`, 1)
}

func last(p []int) int {
	if len(p) == 0 {
		return 0
	}
	return p[len(p)-1]
}
