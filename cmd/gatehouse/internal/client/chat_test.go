package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestClientChatAbortsOnInterrupt: when ctx ends mid-reply, Chat sends chat.abort naming
// its request and session, prints what came until the stream's chat.error, and returns
// ErrInterrupted. The gateway is a stand-in that records what it was sent.
func TestClientChatAbortsOnInterrupt(t *testing.T) {
	var mu sync.Mutex
	var abort struct {
		Type    string `json:"type"`
		Payload struct {
			RequestID string `json:"requestId"`
			SessionID string `json:"sessionId"`
		} `json:"payload"`
	}
	var start struct {
		ID      string `json:"id"`
		Payload struct {
			SessionID string `json:"sessionId"`
		} `json:"payload"`
	}
	aborted := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/session/abort":
			mu.Lock()
			_ = json.NewDecoder(r.Body).Decode(&abort)
			mu.Unlock()
			close(aborted)
			_, _ = w.Write([]byte(`{"id":"x","type":"chat.abort.result","payload":{"aborted":true}}`))
		case "/session/chat":
			mu.Lock()
			_ = json.NewDecoder(r.Body).Decode(&start)
			id := start.ID
			mu.Unlock()
			if r.URL.Query().Get("route") != "count" {
				t.Errorf("route %q", r.URL.RawQuery)
			}
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(`event: chat.event` + "\ndata: " + `{"id":"` + id + `","type":"chat.event","payload":{"type":"text-delta","text":"1 "}}` + "\n\n"))
			w.(http.Flusher).Flush()
			select {
			case <-aborted:
				_, _ = w.Write([]byte(`event: chat.error` + "\ndata: " + `{"id":"` + id + `","type":"chat.error","payload":{"errorId":"aborted","message":"Aborted","code":-32024}}` + "\n\n"))
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	c, _ := New(Options{URL: srv.URL})
	ctx, interrupt := context.WithCancel(context.Background())
	var out, errw bytes.Buffer
	o := &Output{Out: writerFunc(func(p []byte) (int, error) {
		interrupt() // the first text came: Ctrl-C
		return out.Write(p)
	}), Err: &errw, Width: 80}
	err := c.Chat(ctx, Chat{Route: "count", Message: "count"}, o)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Chat: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if abort.Type != "chat.abort" || abort.Payload.RequestID != start.ID || abort.Payload.SessionID == "" ||
		abort.Payload.SessionID != start.Payload.SessionID {
		t.Fatalf("abort %+v for start %+v", abort, start)
	}
	if out.String() != "1 \n" {
		t.Fatalf("printed %q", out.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestClientChatRefusals: a chat refused before its stream — an error envelope or a
// JSON-RPC error — ends with that error's code.
func TestClientChatRefusals(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		status     int
		want       int
	}{
		{"envelope", `{"id":"r","type":"chat.error","payload":{"errorId":"unknown_route","message":"No such session route","code":-32601}}`, 404, ExitInvalid},
		{"json-rpc", `{"jsonrpc":"2.0","id":null,"error":{"code":4001,"message":"Authentication failed"}}`, 401, ExitAuth},
		{"not JSON", `<html>`, 502, ExitTransport},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c, _ := New(Options{URL: srv.URL})
			var out bytes.Buffer
			err := c.Chat(context.Background(), Chat{Message: "hi"}, &Output{Out: &out, Err: &out})
			if ExitCode(err) != tt.want || strings.Contains(out.String(), "hi") {
				t.Fatalf("err %v (exit %d), want exit %d; printed %q", err, ExitCode(err), tt.want, out.String())
			}
		})
	}
}
