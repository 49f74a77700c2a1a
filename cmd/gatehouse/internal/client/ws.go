package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

// CallWS runs one request over the WebSocket face (GET /ws) and returns its result; the
// $/event notifications of a stream of named events are returned as for Call.
func (c *Client) CallWS(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	var events []Event
	rs, err := c.exchangeWS(ctx, request(1, method, params), 1, func(e Event) { events = append(events, e) })
	if err != nil {
		return nil, err
	}
	if events != nil && rs[0].Error == nil {
		out, _ := json.Marshal(events)
		return out, nil
	}
	return rs[0].Result, rs[0].Err()
}

// BatchWS sends members as one batch over the WebSocket face; want is how many of them
// have an id (the responses to wait for).
func (c *Client) BatchWS(ctx context.Context, members []json.RawMessage, want int) ([]Response, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	body, _ := json.Marshal(members)
	if want == 0 {
		_, err := c.exchangeWS(ctx, body, 0, nil)
		return nil, err
	}
	return c.exchangeWS(ctx, body, want, nil)
}

// exchangeWS sends body on a new connection and reads until want responses came (a batch
// answer counts each of its members); notifications are skipped, $/event ones handed to onEvent.
func (c *Client) exchangeWS(ctx context.Context, body []byte, want int, onEvent func(Event)) ([]Response, error) {
	conn, resp, err := websocket.DefaultDialer.DialContext(ctx, c.wsEndpoint("/ws"), c.header())
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxErr(ctx)
		}
		if resp != nil {
			defer func() { _ = resp.Body.Close() }()
			if b, rerr := readBody(ctx, resp); rerr == nil {
				var r Response
				if json.Unmarshal(b, &r) == nil && r.Error != nil {
					return nil, r.Error // refused before the upgrade (401 …)
				}
				return nil, notJSONRPC(resp.StatusCode, b)
			}
		}
		return nil, &TransportError{Err: err}
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if err := conn.WriteMessage(websocket.TextMessage, body); err != nil {
		return nil, &TransportError{Err: err}
	}
	var out []Response
	for len(out) < want {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctxErr(ctx)
			}
			return nil, &TransportError{Err: errNoResponse}
		}
		if len(msg) > 0 && msg[0] == '[' {
			var rs []Response
			if json.Unmarshal(msg, &rs) != nil {
				return nil, notJSONRPC(http.StatusSwitchingProtocols, msg)
			}
			out = append(out, rs...)
			continue
		}
		var m struct {
			Response
			Method string `json:"method"`
			Params struct {
				Event string          `json:"event"`
				Data  json.RawMessage `json:"data"`
			} `json:"params"`
		}
		if json.Unmarshal(msg, &m) != nil {
			return nil, notJSONRPC(http.StatusSwitchingProtocols, msg)
		}
		if m.Method != "" {
			if m.Method == "$/event" && onEvent != nil {
				onEvent(Event{Name: m.Params.Event, Data: m.Params.Data})
			}
			continue
		}
		out = append(out, m.Response)
	}
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	return out, nil
}
