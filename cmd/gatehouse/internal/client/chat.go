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
	streamCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	abortDone := make(chan struct{})
	defer context.AfterFunc(ctx, func() {
		defer close(abortDone)
		c.abortChat(context.WithoutCancel(ctx), reqID, ch.SessionID)
		time.AfterFunc(cancelGrace, stop) // the stream's chat.error should end it before
	})()
	resp, err := c.startChat(streamCtx, reqID, ch)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	v := &chatView{o: o, events: ch.Events}
	err = ReadEvents(resp.Body, v.handle)
	v.endLine()
	if ctx.Err() != nil {
		<-abortDone
		return ErrInterrupted
	}
	switch {
	case err != nil && !errors.Is(err, errStop):
		return &TransportError{Err: err}
	case !v.ended:
		return &TransportError{Err: errors.New("the chat stream ended before chat.done")}
	}
	return v.final
}

// startChat posts chat.start and returns the event stream's response; a refusal before the
// stream (an error envelope or a JSON-RPC error) is returned as its error.
func (c *Client) startChat(ctx context.Context, reqID string, ch Chat) (*http.Response, error) {
	payload := map[string]any{"message": ch.Message, "sessionId": ch.SessionID}
	if ch.Options != nil {
		payload["options"] = ch.Options
	}
	body, _ := json.Marshal(map[string]any{"id": reqID, "type": "chat.start", "payload": payload})
	path := "/session/chat"
	if ch.Route != "" {
		path += "?route=" + url.QueryEscape(ch.Route)
	}
	resp, err := c.post(ctx, path, body, "text/event-stream")
	if err != nil || isEventStream(resp) {
		return resp, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := readBody(ctx, resp)
	if err != nil {
		return nil, err
	}
	var env envelope
	var ce chatError
	if json.Unmarshal(b, &env) == nil && env.Type != "" && json.Unmarshal(env.Payload, &ce) == nil {
		return nil, ce.err()
	}
	var r Response
	if json.Unmarshal(b, &r) == nil && r.Error != nil {
		return nil, r.Error
	}
	return nil, notJSONRPC(resp.StatusCode, b)
}

// abortChat sends chat.abort for the request reqID of session sid (at most cancelGrace).
func (c *Client) abortChat(ctx context.Context, reqID, sid string) {
	ctx, cancel := context.WithTimeout(ctx, cancelGrace)
	defer cancel()
	b, _ := json.Marshal(map[string]any{"id": reqID + "_abort", "type": "chat.abort",
		"payload": map[string]string{"requestId": reqID, "sessionId": sid}})
	if resp, err := c.post(ctx, "/session/abort", b, ""); err == nil {
		_ = resp.Body.Close()
	}
}

// chatView prints a chat's envelopes as they come.
type chatView struct {
	o        *Output
	events   bool  // every envelope as a JSON line
	ended    bool  // chat.done or chat.error came
	final    error // chat.error's
	wrote    bool  // text was printed
	lineOpen bool  // the text printed does not end its line
}

// handle shows one event of the stream; errStop once the request has ended.
func (v *chatView) handle(e Event) error {
	var env envelope
	if json.Unmarshal(e.Data, &env) != nil {
		return fmt.Errorf("not a session envelope: %s", abbreviate(string(e.Data)))
	}
	if v.events {
		fmt.Fprintln(v.o.Out, compact(e.Data))
	}
	switch env.Type {
	case "chat.event":
		v.event(env.Payload)
	case "chat.done":
		v.ended = true
		var d struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(env.Payload, &d)
		if !v.events && !v.wrote && d.Text != "" {
			v.text(d.Text)
		}
		return errStop
	case "chat.error", EventError:
		v.ended = true
		var ce chatError
		_ = json.Unmarshal(env.Payload, &ce)
		v.final = ce.err()
		return errStop
	}
	return nil
}

// event shows a chat.event: text deltas on stdout, the rest dimmed on stderr on a terminal.
func (v *chatView) event(payload json.RawMessage) {
	var ev struct {
		Type string `json:"type"`
		Text string `json:"text"`
		Name string `json:"name"`
	}
	_ = json.Unmarshal(payload, &ev)
	switch {
	case v.events:
	case ev.Type == "text-delta":
		v.text(ev.Text)
	case v.o.TTY:
		v.endLine()
		fmt.Fprintln(v.o.Err, v.o.Colorize("[dim]"+describeChatEvent(ev.Type, ev.Name, payload)+"[reset]"))
	}
}

func (v *chatView) text(s string) {
	_, _ = io.WriteString(v.o.Out, s)
	v.wrote, v.lineOpen = true, !strings.HasSuffix(s, "\n")
}

// endLine ends the line the text left open.
func (v *chatView) endLine() {
	if v.lineOpen {
		fmt.Fprintln(v.o.Out)
		v.lineOpen = false
	}
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
