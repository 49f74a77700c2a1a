package session

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	wire "github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

func TestAuth(t *testing.T) {
	e := newEnv(t, nil)
	e.gw.tokens["soon"] = gateway.Principal{Subject: "carol", Expires: time.Now().Add(300 * time.Millisecond)}
	t.Run("websocket bearer subprotocol is echoed", func(t *testing.T) {
		c, resp, err := e.dialWS("", http.Header{"Sec-WebSocket-Protocol": {"bearer.alice"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != "bearer.alice" {
			t.Fatalf("subprotocol %q", got)
		}
	})
	refusals := []struct {
		name   string
		header http.Header
	}{
		{"unknown token", http.Header{"Sec-WebSocket-Protocol": {"bearer.mallory"}}},
		{"empty bearer", http.Header{"Sec-WebSocket-Protocol": {"bearer."}}},
		{"two bearers", http.Header{"Sec-WebSocket-Protocol": {"bearer.alice, bearer.bob"}}},
		{"bearer and Authorization", http.Header{"Sec-WebSocket-Protocol": {"bearer.alice"}, "Authorization": {"Bearer alice"}}},
	}
	for _, tt := range refusals {
		t.Run("websocket refused: "+tt.name, func(t *testing.T) {
			_, resp, err := e.dialWS("", tt.header)
			if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("got %v %v, want 401", resp, err)
			}
		})
	}
	t.Run("unknown route", func(t *testing.T) {
		_, resp, err := e.dialWS("?route=nope", nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("got %v %v, want 404", resp, err)
		}
	})
	t.Run("http refused before the body is read", func(t *testing.T) {
		c := e.sse("s1", "script")
		c.token = "mallory"
		resp, err := c.post(t.Context(), PathChat, []byte(`not even json`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("status %d, challenge %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	})
	t.Run("sessions belong to their principal", func(t *testing.T) {
		a := e.sse("shared", "script")
		a.token = "alice"
		defer a.close()
		ra := newRecorder(t, a)
		a.send("A1", wire.TypeChatStart, map[string]any{"message": "slow-owner"})
		ra.has("A1", wire.TypeChatStarted)
		b := e.sse("shared", "script")
		b.token = "bob"
		defer b.close()
		rb := newRecorder(t, b)
		b.send("B1", wire.TypeChatStart, map[string]any{"message": "ok"}) // bob's "shared" is his own: it runs at once
		if ms := rb.terminal("B1"); ms[len(ms)-1].Type != wire.TypeChatDone {
			t.Fatalf("bob:%s", rb.dump("B1"))
		}
		b.send("B2", wire.TypeChatAbort, map[string]any{"requestId": "A1"})
		if res := rb.has("B2", wire.TypeChatAbortResult); res.field("aborted") != false {
			t.Fatalf("bob aborted alice's request: %s", res.Payload)
		}
		a.send("A2", wire.TypeChatAbort, map[string]any{"requestId": "A1"})
		ra.terminal("A1")
		<-e.target.cancelled
	})
	t.Run("websocket credential expiry ends the connection with a typed error", func(t *testing.T) {
		c, _, err := e.dialWS("", http.Header{"Authorization": {"Bearer soon"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		r := newRecorder(t, c)
		c.send("rpc_1", wire.TypeChatStart, map[string]any{"message": "slow-expiry"})
		r.has("rpc_1", wire.TypeChatStarted)
		ms := r.terminal("rpc_1")
		if last := ms[len(ms)-1]; last.field("errorId") != wire.ErrorCredential {
			t.Fatalf("terminal:%s", r.dump("rpc_1"))
		}
		if m := r.has(serverMsgID, wire.TypeError); m.field("errorId") != wire.ErrorCredential {
			t.Fatalf("error %s", m.Payload)
		}
		<-e.target.cancelled
		for range c.ch { // the reader goroutine owns reads; wait for it to see the close
		}
		var ce *websocket.CloseError
		if !errors.As(c.err, &ce) || ce.Code != CloseCredentialEnded || ce.Text != CloseReasonExpired {
			t.Fatalf("closed with %v", c.err)
		}
	})
	t.Run("sse credential expiry ends the request", func(t *testing.T) {
		c := e.sse("exp", "script")
		c.token = "soon"
		defer c.close()
		e.gw.tokens["soon"] = gateway.Principal{Subject: "carol", Expires: time.Now().Add(300 * time.Millisecond)}
		r := newRecorder(t, c)
		c.send("rpc_1", wire.TypeChatStart, map[string]any{"message": "slow-sse-expiry"})
		ms := r.terminal("rpc_1")
		if last := ms[len(ms)-1]; last.field("errorId") != wire.ErrorCredential {
			t.Fatalf("terminal:%s", r.dump("rpc_1"))
		}
		<-e.target.cancelled
	})
}

func TestLimitsAtTheEdge(t *testing.T) {
	t.Run("max_queued", func(t *testing.T) {
		for _, tr := range transports {
			t.Run(tr.name, func(t *testing.T) {
				e := newEnv(t, func(c *Config) { c.MaxQueued = 2 })
				c := tr.open(t, e, "script")
				defer c.close()
				r := newRecorder(t, c)
				c.send("R", wire.TypeChatStart, map[string]any{"message": "slow-r"})
				r.has("R", wire.TypeChatStarted)
				c.send("Q1", wire.TypeChatStart, map[string]any{"message": "ok"})
				r.has("Q1", wire.TypeChatQueued)
				c.send("Q2", wire.TypeChatStart, map[string]any{"message": "ok"})
				r.has("Q2", wire.TypeChatQueued, "position", 2)
				c.send("Q3", wire.TypeChatStart, map[string]any{"message": "ok"})
				if ms := r.terminal("Q3"); len(ms) != 1 || ms[0].field("errorId") != wire.ErrorQueueFull {
					t.Fatalf("one past max_queued:%s", r.dump("Q3"))
				}
				c.send("rpc_a", wire.TypeChatAbort, map[string]any{"requestId": "R"})
				for _, id := range []string{"R", "Q1", "Q2"} {
					if err := checkRequest(r.terminal(id)); err != nil {
						t.Fatalf("%s: %v", id, err)
					}
				}
				<-e.target.cancelled
			})
		}
	})
	t.Run("max_tasks forgets the oldest finished", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.MaxQueued = 1; c.MaxTasks = 3 })
		c, _, err := e.dialWS("", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		r := newRecorder(t, c)
		var tasks []string
		for i := range 4 {
			id := string(rune('a' + i))
			c.send(id, wire.TypeChatStart, map[string]any{"message": "ok"})
			ms := r.terminal(id)
			tasks = append(tasks, ms[0].field("taskId").(string))
		}
		c.send("s0", wire.TypeTaskStatus, map[string]any{"taskId": tasks[0]})
		if m := r.has("s0", wire.TypeError); m.field("errorId") != wire.ErrorUnknownTask {
			t.Fatalf("the oldest task is remembered past max_tasks: %s", m.Payload)
		}
		c.send("s1", wire.TypeTaskStatus, map[string]any{"taskId": tasks[1]})
		if m := r.has("s1", wire.TypeTaskStatusResult); m.field("state") != wire.StateDone {
			t.Fatalf("task 1: %s", m.Payload)
		}
	})
	t.Run("max_message_bytes", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.MaxMessageBytes = 256 })
		fits := `{"id":"rpc_1","type":"chat.start","payload":{"message":"ok","pad":"`
		fits += strings.Repeat("x", 256-len(fits)-3) + `"}}`
		if len(fits) != 256 {
			t.Fatalf("%d", len(fits))
		}
		big := strings.Replace(fits, `"pad":"`, `"pad":"x`, 1)
		t.Run("websocket", func(t *testing.T) {
			c, _, err := e.dialWS("", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.close()
			r := newRecorder(t, c)
			_ = c.c.WriteMessage(websocket.TextMessage, []byte(fits))
			if ms := r.terminal("rpc_1"); ms[len(ms)-1].Type != wire.TypeChatDone {
				t.Fatalf("at the limit:%s", r.dump("rpc_1"))
			}
			_ = c.c.WriteMessage(websocket.TextMessage, []byte(big))
			for range c.ch {
			}
			var ce *websocket.CloseError
			if !errors.As(c.err, &ce) || ce.Code != websocket.CloseMessageTooBig {
				t.Fatalf("one byte past the limit: %v", c.err)
			}
		})
		t.Run("sse", func(t *testing.T) {
			c := e.sse("", "script")
			for body, want := range map[string]int{fits: http.StatusOK, big: http.StatusRequestEntityTooLarge} {
				resp, err := c.post(t.Context(), PathChat, []byte(body))
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				_, _ = buf.ReadFrom(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Fatalf("%d bytes: status %d, want %d: %s", len(body), resp.StatusCode, want, buf.String())
				}
			}
		})
	})
	t.Run("envelope errors", func(t *testing.T) {
		e := newEnv(t, nil)
		c, _, err := e.dialWS("", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		r := newRecorder(t, c)
		for _, tt := range []struct{ in, id, errorID string }{
			{`{"id":"x1","type":"chat.nope"}`, "x1", wire.ReasonUnknownType},
			{`{"id":"x2","id":"x3","type":"status.get"}`, "rpc_unknown", wire.ReasonDuplicate},
			{`{"type":"status.get"}`, "rpc_unknown", wire.ReasonMissingID},
			{`nope`, "rpc_unknown", wire.ReasonParse},
			{`{"id":"x4","type":"chat.start","payload":{"message":3}}`, "x4", wire.ErrorInvalidPayload},
			{`{"id":"x5","type":"chat.abort","payload":{}}`, "x5", wire.ErrorInvalidPayload},
		} {
			_ = c.c.WriteMessage(websocket.TextMessage, []byte(tt.in))
			m := r.until(tt.id, tt.errorID, func(ms []msg) bool { return len(ms) > 0 })
			if got := m[len(m)-1].field("errorId"); got != tt.errorID {
				t.Errorf("%s: errorId %v, want %s", tt.in, got, tt.errorID)
			}
			r.byID[tt.id] = nil
		}
	})
	t.Run("a silent websocket peer is disconnected", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.PingInterval = 50 * time.Millisecond; c.PongTimeout = 100 * time.Millisecond })
		u := "ws" + strings.TrimPrefix(e.srv.URL, "http") + Path
		c, _, err := websocket.DefaultDialer.Dial(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetPingHandler(func(string) error { return nil }) // never pong
		began := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				var ne interface{ Timeout() bool }
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatal("a peer that never pongs was not disconnected")
				}
				break
			}
		}
		if d := time.Since(began); d > 3*time.Second {
			t.Fatalf("disconnected after %v", d)
		}
	})
}

// TestSlowConsumerIsCutOff: a consumer that stops reading while its request streams is
// cut off within half write_timeout of its queue filling; other connections are unaffected.
func TestSlowConsumerIsCutOff(t *testing.T) {
	f := New(nil, nil)
	c := newConn(f, nil, Config{SendQueue: 3, SendQueueBytes: 1 << 20, WriteTimeout: 20 * time.Millisecond}.WithDefaults(1<<20), "script")
	c.f.log = discardLog()
	for i := range 3 {
		if !(wsSink{c}).send([]byte(`{"id":"a","type":"chat.event","payload":{}}`)) {
			t.Fatalf("message %d of 3 refused", i+1)
		}
	}
	if (wsSink{c}).send([]byte(`{"id":"a","type":"chat.event","payload":{}}`)) {
		t.Fatal("one past send_queue was taken")
	}
	if code, _ := c.w.CloseCode(); !errors.Is(causeOf(c), errSlow) || code != websocket.ClosePolicyViolation {
		t.Fatalf("cause %v, close %d", causeOf(c), code)
	}
}

func TestTypeOf(t *testing.T) {
	for _, id := range []string{"rpc_1", `x","type":"chat.done`, `a,"type":"b`} {
		msg := wire.AppendEnvelope(nil, id, wire.TypeChatQueued, []byte(`{"type":"x"}`))
		if got := typeOf(msg); got != wire.TypeChatQueued {
			t.Errorf("id %q: type %q in %s", id, got, msg)
		}
	}
}
