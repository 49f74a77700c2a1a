package demo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/demo"
)

func startChatServer(t *testing.T, opts demo.ChatOptions) (*demo.Chat, *httptest.Server) {
	t.Helper()
	chat, err := demo.NewChat(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(chat.Handler())
	t.Cleanup(func() {
		chat.Close()
		srv.Close()
	})
	return chat, srv
}

type chatConn struct {
	t    *testing.T
	conn *websocket.Conn
}

func dialChat(t *testing.T, srv *httptest.Server, protocols ...string) (*chatConn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{Subprotocols: protocols}
	conn, resp, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/session", nil)
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &chatConn{t: t, conn: conn}, resp, nil
}

func (c *chatConn) send(id, typ, payload string) {
	c.t.Helper()
	msg := `{"id":"` + id + `","type":"` + typ + `"`
	if payload != "" {
		msg += `,"payload":` + payload
	}
	if err := c.conn.WriteMessage(websocket.TextMessage, []byte(msg+"}")); err != nil {
		c.t.Fatal(err)
	}
}

func (c *chatConn) recv() (sessionrpc.Envelope, map[string]any) {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := c.conn.ReadMessage()
	if err != nil {
		c.t.Fatal(err)
	}
	var env sessionrpc.Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		c.t.Fatal(err)
	}
	var p map[string]any
	_ = json.Unmarshal(env.Payload, &p)
	return env, p
}

// until reads messages until one of id with type typ, returning it and the types of the
// messages of id seen on the way.
func (c *chatConn) until(id, typ string) (map[string]any, []string) {
	c.t.Helper()
	var seen []string
	for {
		env, p := c.recv()
		if env.ID == id {
			seen = append(seen, env.Type)
			if env.Type == typ {
				return p, seen
			}
		}
	}
}

func TestChatWebSocketQueueAbortAndTaskStatus(t *testing.T) {
	chat, srv := startChatServer(t, demo.ChatOptions{Delay: 5 * time.Millisecond})
	c, _, err := dialChat(t, srv)
	if err != nil {
		t.Fatal(err)
	}
	c.send("rpc_s", sessionrpc.TypeStatusGet, "")
	if env, p := c.recv(); env.Type != sessionrpc.TypeStatusResult || p["version"] != "1" {
		t.Fatalf("status.get answered %s %v", env.Type, p)
	}
	c.send("rpc_1", sessionrpc.TypeChatStart, `{"message":"first"}`)
	c.send("rpc_2", sessionrpc.TypeChatStart, `{"message":"second","options":{"noTool":true}}`)
	c.send("rpc_3", sessionrpc.TypeChatStart, `{"message":"third","options":{"noTool":true}}`)
	var task3 string
	positions := map[string]float64{}
	for len(positions) < 2 || task3 == "" {
		env, p := c.recv()
		if env.Type == sessionrpc.TypeChatQueued {
			positions[env.ID] = p["position"].(float64)
		}
		if env.ID == "rpc_3" && env.Type == sessionrpc.TypeChatAccepted {
			task3 = p["taskId"].(string)
		}
	}
	if positions["rpc_2"] != 1 || positions["rpc_3"] != 2 {
		t.Fatalf("queue positions %v, want rpc_2 at 1, rpc_3 at 2", positions)
	}
	// Abort the queued rpc_2: it ends, and rpc_3 is told it moved up.
	c.send("rpc_a", sessionrpc.TypeChatAbort, `{"requestId":"rpc_2"}`)
	var sawError, sawResult, sawMove bool
	for !sawError || !sawResult || !sawMove {
		env, p := c.recv()
		switch {
		case env.ID == "rpc_2" && env.Type == sessionrpc.TypeChatError:
			sawError = p["errorId"] == "aborted"
		case env.ID == "rpc_a" && env.Type == sessionrpc.TypeChatAbortResult:
			sawResult = p["aborted"] == true && p["state"] == "queued"
		case env.ID == "rpc_3" && env.Type == sessionrpc.TypeChatQueued:
			if p["position"] != 1.0 {
				t.Fatalf("rpc_3 re-emitted at %v, want 1", p["position"])
			}
			sawMove = true
		}
	}
	c.send("rpc_t", sessionrpc.TypeTaskStatus, `{"taskId":"`+task3+`"}`)
	st, _ := c.until("rpc_t", sessionrpc.TypeTaskStatusResult)
	if st["state"] != "queued" || st["position"] != 1.0 || st["requestId"] != "rpc_3" {
		t.Fatalf("task.status %v, want rpc_3 queued at 1", st)
	}
	// Abort the running rpc_1: it ends with chat.error, and rpc_3 runs to chat.done.
	c.send("rpc_b", sessionrpc.TypeChatAbort, `{"requestId":"rpc_1"}`)
	done, seen := c.until("rpc_3", sessionrpc.TypeChatDone)
	if !strings.Contains(done["text"].(string), "third") || seen[0] != sessionrpc.TypeChatStarted {
		t.Fatalf("rpc_3: %v after %v", done, seen)
	}
	if s := chat.Stats(); s.AbortMessages != 2 || s.Aborted != 2 || s.AbortedByMessage != 2 || s.Completed != 1 {
		t.Fatalf("stats %+v", s)
	}
	c.send("rpc_u", "chat.unknown", `{}`)
	if env, p := c.recv(); env.Type != sessionrpc.TypeError || p["errorId"] != "unknown_type" {
		t.Fatalf("unknown type answered %s %v", env.Type, p)
	}
}

func TestChatWebSocketDisconnectAbortsTheRunningRequest(t *testing.T) {
	chat, srv := startChatServer(t, demo.ChatOptions{Delay: 20 * time.Millisecond})
	c, _, err := dialChat(t, srv)
	if err != nil {
		t.Fatal(err)
	}
	c.send("rpc_1", sessionrpc.TypeChatStart, `{"message":"x"}`)
	c.until("rpc_1", sessionrpc.TypeChatEvent)
	_ = c.conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	for chat.Stats().Aborted != 1 || chat.Stats().AbortedByMessage != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the request was not aborted: %+v", chat.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestChatToken(t *testing.T) {
	_, srv := startChatServer(t, demo.ChatOptions{Token: "sekret"})
	if _, resp, err := dialChat(t, srv); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial without the token: %v", err)
	}
	if _, resp, err := dialChat(t, srv, "bearer.wrong"); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial with a wrong token: %v", err)
	}
	c, resp, err := dialChat(t, srv, "bearer.sekret")
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("Sec-Websocket-Protocol"); got != "bearer.sekret" {
		t.Fatalf("subprotocol %q not echoed", got)
	}
	c.send("rpc_s", sessionrpc.TypeStatusGet, "")
	c.until("rpc_s", sessionrpc.TypeStatusResult)
	for _, auth := range []string{"", "Bearer wrong"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/session/status", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("POST /session/status with %q: %d", auth, resp.StatusCode)
		}
	}
}

// sseMessages posts a chat.start and returns the envelopes of its event stream.
func sseMessages(t *testing.T, srv *httptest.Server, body string, out chan<- sessionrpc.Envelope) {
	resp, err := http.Post(srv.URL+"/session/chat", "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		close(out)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var env sessionrpc.Envelope
			_ = json.Unmarshal([]byte(data), &env)
			out <- env
		}
	}
	close(out)
}

func TestChatSSEQueuesPerSessionAndAborts(t *testing.T) {
	chat, srv := startChatServer(t, demo.ChatOptions{Delay: 10 * time.Millisecond})
	first, second := make(chan sessionrpc.Envelope, 256), make(chan sessionrpc.Envelope, 256)
	go sseMessages(t, srv, `{"id":"rpc_1","type":"chat.start","payload":{"message":"a","sessionId":"s"}}`, first)
	if env := <-first; env.Type != sessionrpc.TypeChatAccepted {
		t.Fatalf("first message %s", env.Type)
	}
	go sseMessages(t, srv, `{"id":"rpc_2","type":"chat.start","payload":{"message":"b","sessionId":"s","options":{"noTool":true}}}`, second)
	<-second // accepted
	if env := <-second; env.Type != sessionrpc.TypeChatQueued || !strings.Contains(string(env.Payload), `"position":1`) {
		t.Fatalf("second request: %s %s, want chat.queued at 1", env.Type, env.Payload)
	}
	resp, err := http.Post(srv.URL+"/session/abort", "application/json",
		strings.NewReader(`{"id":"rpc_a","type":"chat.abort","payload":{"requestId":"rpc_1","sessionId":"s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var res sessionrpc.Envelope
	_ = json.NewDecoder(resp.Body).Decode(&res)
	_ = resp.Body.Close()
	if res.Type != sessionrpc.TypeChatAbortResult || !strings.Contains(string(res.Payload), `"aborted":true`) {
		t.Fatalf("abort answered %s %s", res.Type, res.Payload)
	}
	var last sessionrpc.Envelope
	for env := range first {
		last = env
	}
	if last.Type != sessionrpc.TypeChatError || !strings.Contains(string(last.Payload), `"aborted"`) {
		t.Fatalf("the aborted request ended with %s %s", last.Type, last.Payload)
	}
	for env := range second {
		last = env
	}
	if last.Type != sessionrpc.TypeChatDone {
		t.Fatalf("the queued request ended with %s %s", last.Type, last.Payload)
	}
	if s := chat.Stats(); s.Completed != 1 || s.Aborted != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestChatLimits(t *testing.T) {
	_, srv := startChatServer(t, demo.ChatOptions{Delay: time.Second, MaxQueued: 1, MaxMessageBytes: 512})
	c, _, err := dialChat(t, srv)
	if err != nil {
		t.Fatal(err)
	}
	c.send("rpc_1", sessionrpc.TypeChatStart, `{"message":"runs"}`)
	c.send("rpc_2", sessionrpc.TypeChatStart, `{"message":"queued"}`)
	c.until("rpc_2", sessionrpc.TypeChatQueued)
	c.send("rpc_3", sessionrpc.TypeChatStart, `{"message":"one too many"}`)
	if p, _ := c.until("rpc_3", sessionrpc.TypeChatError); p["errorId"] != "queue_full" {
		t.Fatalf("a chat.start beyond max_queued: %v", p)
	}
	c.send("rpc_1", sessionrpc.TypeChatStart, `{"message":"same id"}`)
	if p, _ := c.until("rpc_1", sessionrpc.TypeChatError); p["errorId"] != "duplicate_request" {
		t.Fatalf("a second chat.start with a running id: %v", p)
	}
	c.send("rpc_4", sessionrpc.TypeChatStart, `{"message":"`+strings.Repeat("x", 600)+`"}`)
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := c.conn.ReadMessage(); err != nil {
			if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
				t.Fatalf("a message over max_message_bytes ended the connection with %v, want close 1009", err)
			}
			break
		}
	}
}
