package server

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func wsSend(t *testing.T, c *websocket.Conn, msg string) {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

func TestWSResponsesAsTheyComplete(t *testing.T) {
	ts := start(t, baseConfig, probes{"slow": {delay: 300 * time.Millisecond}, "fast": {}}.asTargets())
	c := dialWS(t, ts, nil)
	wsSend(t, c, `{"jsonrpc":"2.0","method":"slow","id":1}`)
	wsSend(t, c, `{"jsonrpc":"2.0","method":"fast","id":2}`)
	first := decodeOne(t, wsRead(t, c, 5*time.Second))
	second := decodeOne(t, wsRead(t, c, 5*time.Second))
	if string(first.ID) != "2" || string(second.ID) != "1" {
		t.Fatalf("got ids %s then %s; want the fast call answered first", first.ID, second.ID)
	}
}

func TestWSInFlightLimit(t *testing.T) {
	p := &probe{delay: 400 * time.Millisecond, started: make(chan string, 8)}
	ts := start(t, strings.Replace(baseConfig, "websocket: {}", "websocket: {max_in_flight: 2}", 1), probes{"slow": p}.asTargets())
	c := dialWS(t, ts, nil)
	wsSend(t, c, `{"jsonrpc":"2.0","method":"slow","id":1}`)
	wsSend(t, c, `{"jsonrpc":"2.0","method":"slow","id":2}`)
	<-p.started
	<-p.started
	wsSend(t, c, `[{"jsonrpc":"2.0","method":"slow","id":3},{"jsonrpc":"2.0","method":"slow"}]`)
	rejected := decodeMany(t, wsRead(t, c, 5*time.Second))
	if len(rejected) != 1 || rejected[0].Error == nil || rejected[0].Error.Code != 5002 ||
		rejected[0].Error.Data["limit"] != "max_in_flight" || rejected[0].Error.Data["retry_after_ms"] == nil {
		t.Fatalf("third message: %+v", rejected)
	}
	for range 2 {
		if r := decodeOne(t, wsRead(t, c, 5*time.Second)); r.Error != nil {
			t.Fatalf("an admitted call failed: %+v", r.Error)
		}
	}
	// Slots are free again.
	wsSend(t, c, `{"jsonrpc":"2.0","method":"slow","id":4}`)
	if r := decodeOne(t, wsRead(t, c, 5*time.Second)); r.Error != nil || string(r.ID) != "4" {
		t.Fatalf("after the limit cleared: %+v", r)
	}
}

func TestWSKeepalive(t *testing.T) {
	ts := start(t, strings.Replace(baseConfig, "websocket: {}", "websocket: {ping_interval: 100ms, pong_timeout: 400ms}", 1), nil)

	t.Run("a peer that answers pings stays", func(t *testing.T) {
		c := dialWS(t, ts, nil)
		done := make(chan error, 1)
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(1200 * time.Millisecond)) // > ping_interval + pong_timeout
			_, _, err := c.ReadMessage()                                   // answers pings while it reads
			done <- err
		}()
		err := <-done
		var ne interface{ Timeout() bool }
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("connection dropped although pongs were sent: %v", err)
		}
	})
	t.Run("a silent peer is disconnected", func(t *testing.T) {
		c := dialWS(t, ts, nil)
		c.SetPingHandler(func(string) error { return nil }) // never pong
		began := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _, err := c.ReadMessage()
		if err == nil || time.Since(began) > 3*time.Second { // ping_interval + pong_timeout = 500ms
			t.Fatalf("silent peer kept for %v (err %v)", time.Since(began), err)
		}
	})
}

func TestWSSlowConsumerIsDisconnected(t *testing.T) {
	big := append(append([]byte(`"`), bytes.Repeat([]byte("x"), 256<<10)...), '"')
	ts := start(t, strings.Replace(baseConfig, "websocket: {}", "websocket: {send_queue: 2, write_timeout: 200ms, max_in_flight: 1000}", 1),
		probes{"big": {result: big}}.asTargets())
	c := dialWS(t, ts, nil)
	for i := range 300 {
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"big","id":1}`)); err != nil {
			t.Logf("write %d failed: the server has hung up (%v)", i, err)
			break
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for ts.wsCount() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("a consumer that never reads is still connected")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status, _, _ := ts.post(`{"jsonrpc":"2.0","method":"get_data","id":1}`); status != 200 {
		t.Fatal("server unhealthy after dropping a slow consumer")
	}
}

func (s *Server) wsCount() int { return s.ws.Open() }

func TestWSMessageTooBig(t *testing.T) {
	ts := start(t, strings.Replace(baseConfig, "websocket: {}", "websocket: {max_message_bytes: 100}", 1), nil)
	c := dialWS(t, ts, nil)
	wsSend(t, c, `{"jsonrpc":"2.0","method":"update","params":["`+strings.Repeat("a", 100)+`"]}`)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err := c.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("got %v, want close 1009", err)
	}
}

func TestWSOriginAndAuth(t *testing.T) {
	ts := start(t, strings.Replace(baseConfig, "websocket: {}", `websocket: {allowed_origins: ["https://app.example"]}`, 1), nil)
	url := "ws" + strings.TrimPrefix(ts.base, "http") + "/ws"
	tests := []struct {
		origin string
		status int
	}{
		{"", http.StatusSwitchingProtocols},
		{"https://app.example", http.StatusSwitchingProtocols},
		{"https://evil.example", http.StatusForbidden},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.origin != "" {
			h.Set("Origin", tt.origin)
		}
		c, resp, err := websocket.DefaultDialer.Dial(url, h)
		if resp == nil {
			t.Fatalf("origin %q: %v", tt.origin, err)
		}
		_ = resp.Body.Close()
		if c != nil {
			_ = c.Close()
		}
		if resp.StatusCode != tt.status {
			t.Errorf("origin %q: status %d, want %d", tt.origin, resp.StatusCode, tt.status)
		}
	}
	_, resp, _ := websocket.DefaultDialer.Dial(url, http.Header{"Authorization": {"Bearer nope"}})
	if resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad credential: %v", resp)
	}
	_ = resp.Body.Close()
}
