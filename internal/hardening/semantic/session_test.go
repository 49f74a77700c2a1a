package semantic

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
)

// TestSession sends hostile envelopes over session RPC's WebSocket (/session?route=calc):
// ids at their 128 bytes ± 1, injected types, hostile arguments, payloads past the
// decoder's depth and string limits, messages at session.max_message_bytes ± 1. Each
// request must end with its one terminal message (chat.done, chat.error or error) of the
// expected errorId, reaching the backend only when it was served.
func TestSession(t *testing.T) {
	e := newEnv(t)
	g := e.gen
	url := "ws" + strings.TrimPrefix(e.g.Base, "http") + "/session?route=calc"
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
	start := func(id, args string) string {
		return `{"id":"` + id + `","type":"chat.start","payload":{"message":"5 minus 3","arguments":` + args + `}}`
	}
	const args = `{"minuend":5,"subtrahend":3}`
	type sessCall struct {
		env, id string
		want    string // "chat.done", or the errorId of chat.error / error, or "close-1009"
	}
	classes := []struct {
		name string
		make func() sessCall
	}{
		{"valid", func() sessCall { return sessCall{env: start("rpc_1", args), id: "rpc_1", want: "chat.done"} }},
		{"id/at-limit", func() sessCall {
			id := g.HeaderPad(maxSessionID)
			id = strings.NewReplacer(`"`, "q", `\`, "b").Replace(id)
			return sessCall{env: start(id, args), id: id, want: "chat.done"}
		}},
		{"id/over-limit", func() sessCall {
			return sessCall{env: start(strings.Repeat("a", maxSessionID+1), args), id: "rpc_unknown", want: "invalid_id"}
		}},
		{"type/injection", func() sessCall {
			return sessCall{env: `{"id":"rpc_2","type":"` + g.Injected("chat.start") + `","payload":{}}`, id: "rpc_2", want: "unknown_type"}
		}},
		{"arguments/unicode", func() sessCall {
			return sessCall{env: start("rpc_3", `{"minuend":"x`+g.Content(100)+`","subtrahend":3}`), id: "rpc_3", want: "invalid_params"}
		}},
		{"payload/too-deep", func() sessCall {
			return sessCall{env: start("rpc_4", `{"minuend":5,"subtrahend":3,"x":`+nest(maxDepth)+`}`), id: "rpc_unknown", want: "too_deep"} // the envelope could not be read
		}},
		{"payload/string-too-long", func() sessCall {
			return sessCall{env: start("rpc_5", `{"minuend":5,"subtrahend":3,"x":"`+g.Padded(maxString+1)+`"}`), id: "rpc_unknown", want: "string_too_long"}
		}},
		{"message/over-limit", func() sessCall {
			return sessCall{env: pad(start("rpc_6", args), maxSession+1), want: "close-1009"}
		}},
		{"message/at-limit", func() sessCall {
			return sessCall{env: pad(start("rpc_7", args), maxSession), id: "rpc_7", want: "chat.done"}
		}},
	}
	n := hardening.Iterations(t, 240)
	for i := range n {
		cl := classes[i%len(classes)]
		sc := cl.make()
		before := e.hits.Load()
		if err := c.WriteMessage(websocket.TextMessage, []byte(sc.env)); err != nil {
			t.Fatal(err)
		}
		got := ""
		for got == "" {
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, raw, err := c.ReadMessage()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) && ce.Code == websocket.CloseMessageTooBig {
					got = "close-1009"
					_ = c.Close()
					c = dial()
					break
				}
				t.Fatalf("%s: %v", cl.name, err)
			}
			e.leaks("session message", string(raw))
			var m struct {
				ID      string         `json:"id"`
				Type    string         `json:"type"`
				Payload map[string]any `json:"payload"`
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("%s: not an envelope: %s", cl.name, raw)
			}
			switch m.Type {
			case "chat.done":
				got = m.Type
			case "chat.error", "error":
				got, _ = m.Payload["errorId"].(string)
				if _, ok := m.Payload["code"].(float64); !ok || got == "" {
					t.Errorf("%s: %s without errorId or code: %s", cl.name, m.Type, raw)
				}
			default:
				continue
			}
			if m.ID != sc.id {
				t.Errorf("%s: terminal message for id %q, want %q", cl.name, m.ID, sc.id)
			}
		}
		hits := e.hits.Load() - before
		if got != sc.want {
			t.Errorf("%s: got %q, want %q\nsent %.300s", cl.name, got, sc.want, sc.env)
		}
		if served := sc.want == "chat.done"; served && got == sc.want && hits != 1 || !served && hits != 0 {
			t.Errorf("%s: %q with %d backend hits", cl.name, got, hits)
		}
		e.count("session/"+cl.name, got)
		if e.tooMany() {
			break
		}
	}
	e.finish()
}
