package semantic

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
)

// TestWebSocket sends the classes of hostile requests of POST /rpc (but the body's size,
// which is the message's here) over /ws, one message at a time, and messages of exactly
// websocket.max_message_bytes (answered) and one byte more (closed with 1009).
func TestWebSocket(t *testing.T) {
	e := newEnv(t)
	url := "ws" + strings.TrimPrefix(e.g.Base, "http") + "/ws"
	dial := func() *websocket.Conn {
		c, resp, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return c
	}
	c := dial()
	defer func() { _ = c.Close() }()
	read := func() (string, error) {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, msg, err := c.ReadMessage()
		return string(msg), err
	}
	var classes []struct {
		name string
		make func() call
	}
	for _, cl := range rpcClasses(e) {
		if !strings.HasPrefix(cl.name, "body/") {
			classes = append(classes, cl)
		}
	}
	classes = append(classes, []struct {
		name string
		make func() call
	}{
		{"message/at-limit", func() call { return call{body: pad(subtract("13", ""), maxWSMessage), id: "13"} }},
		{"message/over-limit", func() call { return call{body: pad(subtract("14", ""), maxWSMessage+1)} }},
	}...)
	n := hardening.Iterations(t, 400)
	for i := range n {
		cl := classes[i%len(classes)]
		call := cl.make()
		before := e.hits.Load()
		if err := c.WriteMessage(websocket.TextMessage, []byte(call.body)); err != nil {
			t.Fatal(err)
		}
		msg, err := read()
		if cl.name == "message/over-limit" {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
				t.Errorf("%s: %q, %v; want close 1009", cl.name, msg, err)
			} else {
				e.leaks("close reason", ce.Text)
			}
			if hits := e.hits.Load() - before; hits != 0 {
				t.Errorf("%s: %d backend hits", cl.name, hits)
			}
			e.count(cl.name, "close-1009")
			_ = c.Close()
			c = dial()
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", cl.name, err)
		}
		e.leaks("message", msg)
		e.check(cl.name, call, 200, msg, e.hits.Load()-before)
		if e.tooMany() {
			break
		}
	}
	e.finish()
}
