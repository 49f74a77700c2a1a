package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Chat is one chat.start on the session RPC.
type Chat struct {
	Route     string          // the session route ("": the configuration's first)
	Message   string          // the user's message
	SessionID string          // "": one made up, so Ctrl-C can abort the request
	Options   json.RawMessage // chat.start's options (nil: none)
	// Events: print every envelope (one compact JSON line each) instead of the text.
	Events bool
}

// envelope is one message of the session RPC.
type envelope struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// chatError is the payload of chat.error and error.
type chatError struct {
	ErrorID string          `json:"errorId"`
	Message string          `json:"message"`
	Code    int             `json:"code"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

func (e chatError) err() *RPCError {
	code := e.Code
	if code == 0 {
		code = -32603
	}
	return &RPCError{Code: code, Message: e.ErrorID + ": " + e.Message, Data: e.Detail}
}

// Chat sends ch as chat.start over HTTP+SSE (POST /session/chat) and prints the reply's
// text deltas on o.Out as they come (tool calls and status on o.Err, on a terminal).
// When ctx ends (Ctrl-C), it sends chat.abort for the request and returns ErrInterrupted.
func (c *Client) Chat(ctx context.Context, ch Chat, o *Output) error {
	reqID := "rpc_" + strings.TrimPrefix(NewTaskID(), "cli-")
	if ch.SessionID == "" {
		ch.SessionID = NewTaskID()
	}
	payload := map[string]any{"message": ch.Message, "sessionId": ch.SessionID}
	if ch.Options != nil {
		payload["options"] = ch.Options
	}
	body, _ := json.Marshal(map[string]any{"id": reqID, "type": "chat.start", "payload": payload})
	path := "/session/chat"
	if ch.Route != "" {
		path += "?route=" + url.QueryEscape(ch.Route)
	}
	streamCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	abortDone := make(chan struct{})
	defer context.AfterFunc(ctx, func() {
		defer close(abortDone)
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelGrace)
		defer cancel()
		b, _ := json.Marshal(map[string]any{"id": reqID + "_abort", "type": "chat.abort",
			"payload": map[string]string{"requestId": reqID, "sessionId": ch.SessionID}})
		if resp, err := c.postURL(actx, "/session/abort", b); err == nil {
			_ = resp.Body.Close()
		}
		time.AfterFunc(cancelGrace, stop) // the stream's chat.error should end it before
	})()
	resp, err := c.postURL(streamCtx, path, body)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if !isEventStream(resp) {
		b, err := readBody(streamCtx, resp)
		if err != nil {
			return err
		}
		var env envelope
		var ce chatError
		if json.Unmarshal(b, &env) == nil && env.Type != "" && json.Unmarshal(env.Payload, &ce) == nil {
			return ce.err()
		}
		var r Response
		if json.Unmarshal(b, &r) == nil && r.Error != nil {
			return r.Error
		}
		return notJSONRPC(resp.StatusCode, b)
	}
	var final error
	ended, wroteText, lineOpen := false, false, false
	err = ReadEvents(resp.Body, func(e Event) error {
		var env envelope
		if json.Unmarshal(e.Data, &env) != nil {
			return fmt.Errorf("not a session envelope: %s", abbreviate(string(e.Data)))
		}
		if ch.Events {
			fmt.Fprintln(o.Out, compact(e.Data))
		}
		switch env.Type {
		case "chat.event":
			var ev struct {
				Type string `json:"type"`
				Text string `json:"text"`
				Name string `json:"name"`
			}
			_ = json.Unmarshal(env.Payload, &ev)
			switch {
			case ch.Events:
			case ev.Type == "text-delta":
				_, _ = io.WriteString(o.Out, ev.Text)
				wroteText, lineOpen = true, !strings.HasSuffix(ev.Text, "\n")
			case o.TTY:
				if lineOpen {
					fmt.Fprintln(o.Out)
					lineOpen = false
				}
				fmt.Fprintln(o.Err, o.Colorize("[dim]"+describeChatEvent(ev.Type, ev.Name, env.Payload)+"[reset]"))
			}
		case "chat.done":
			ended = true
			var d struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(env.Payload, &d)
			if !ch.Events && !wroteText && d.Text != "" {
				_, _ = io.WriteString(o.Out, d.Text)
				wroteText, lineOpen = true, !strings.HasSuffix(d.Text, "\n")
			}
			return errStop
		case "chat.error", EventError:
			ended = true
			var ce chatError
			_ = json.Unmarshal(env.Payload, &ce)
			final = ce.err()
			return errStop
		}
		return nil
	})
	if lineOpen {
		fmt.Fprintln(o.Out)
	}
	if ctx.Err() != nil {
		<-abortDone
		return ErrInterrupted
	}
	switch {
	case err != nil && !errors.Is(err, errStop):
		return &TransportError{Err: err}
	case !ended:
		return &TransportError{Err: fmt.Errorf("the chat stream ended before chat.done")}
	}
	return final
}

// errStop ends reading a stream early.
var errStop = errors.New("stop")

func describeChatEvent(typ, name string, payload json.RawMessage) string {
	switch typ {
	case "tool-call":
		return "→ tool " + name
	case "status":
		var s struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(payload, &s)
		return strings.TrimSpace("· " + s.Status + " " + s.Message)
	}
	return "· " + typ
}

// postURL posts body to path (which may carry a query) on the gateway.
func (c *Client) postURL(ctx context.Context, path string, body []byte) (*http.Response, error) {
	return c.post(ctx, path, body, "text/event-stream")
}
