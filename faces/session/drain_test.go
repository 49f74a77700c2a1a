package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	wire "github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
)

// TestDrain: a drain ends the queued requests with chat.error "shutting_down", lets the
// running one finish and be answered, then closes the connection with 1001; new
// connections are refused.
func TestDrain(t *testing.T) {
	e := newEnv(t, nil)
	c, _, err := e.dialWS("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	r := newRecorder(t, c)
	c.send("run", wire.TypeChatStart, map[string]any{"message": "sleep:20ms"})
	r.has("run", wire.TypeChatStarted)
	c.send("wait", wire.TypeChatStart, map[string]any{"message": "ok"})
	r.has("wait", wire.TypeChatQueued)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- e.face.Drain(ctx) }()
	if ms := r.terminal("wait"); ms[len(ms)-1].field("errorId") != wire.ErrorShuttingDown {
		t.Fatalf("queued:%s", r.dump("wait"))
	}
	if ms := r.terminal("run"); ms[len(ms)-1].Type != wire.TypeChatDone || checkRequest(ms) != nil {
		t.Fatalf("running:%s", r.dump("run"))
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	for range c.ch {
	}
	var ce *websocket.CloseError
	if !errors.As(c.err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Fatalf("closed with %v", c.err)
	}
	if c2, _, err := e.dialWS("", nil); err == nil {
		for range c2.ch {
		}
		c2.close()
		if !errors.As(c2.err, &ce) || ce.Code != websocket.CloseGoingAway {
			t.Fatalf("a connection after the drain: %v", c2.err)
		}
	}
}

// TestSlowConsumerDoesNotStallOthers: a client that stops reading while its request
// streams is cut off once its send queue stays full for half write_timeout; another
// client's conversation meanwhile runs to its end.
func TestSlowConsumerDoesNotStallOthers(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SendQueue = 8; c.WriteTimeout = 200 * time.Millisecond })
	slow, _, err := websocket.DefaultDialer.Dial("ws"+e.srv.URL[len("http"):]+Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	// Enough events to fill the socket buffers on both sides and then the send queue.
	if err := slow.WriteMessage(websocket.TextMessage, []byte(`{"id":"big","type":"chat.start","payload":{"message":"events:300000"}}`)); err != nil {
		t.Fatal(err)
	}
	c, _, err := e.dialWS("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	r := newRecorder(t, c)
	c.send("rpc_1", wire.TypeChatStart, map[string]any{"message": "ok"})
	if ms := r.terminal("rpc_1"); ms[len(ms)-1].Type != wire.TypeChatDone {
		t.Fatalf("the other client:%s", r.dump("rpc_1"))
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.face.Pending() > 0 { // the slow client's request ends: it was cut off
		if time.Now().After(deadline) {
			t.Fatal("the slow consumer was never cut off")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := slow.ReadMessage(); err != nil {
			var ne interface{ Timeout() bool }
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the slow consumer's connection stayed open")
			}
			break
		}
	}
}
