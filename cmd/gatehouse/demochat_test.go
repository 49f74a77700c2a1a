package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	routing "github.com/gatehouse-dev/gatehouse/routing/sessionrpc"
)

// TestDemoChatProcess runs the real binary's demo-chat as the supervised command of a
// session upstream (the way the default configuration runs it) and holds a conversation
// with it over both transports: the reply's tool call runs on a `gatehouse demo-mcp`
// child of its own, and the hop token is checked. Closing the upstream stops the process.
func TestDemoChatProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	const token = "demo-chat-process-token"
	supervised, err := routing.NewUpstream("chat", routing.UpstreamConfig{
		URL:     "ws://" + addr + "/session",
		Command: binary, Args: []string{"demo-chat", "--listen", addr, "--delay", "1ms"},
		Env: map[string]string{"GATEHOUSE_DEMO_CHAT_TOKEN": token},
	}, routing.UpstreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = supervised.Close() }()
	waitFor(t, func() bool { return supervised.Ready(context.Background()) == nil })

	sse, err := routing.NewUpstream("chat-sse", routing.UpstreamConfig{URL: "http://" + addr}, routing.UpstreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sse.Close() }()
	for _, u := range []*routing.Upstream{supervised, sse} {
		t.Run(u.Name(), func(t *testing.T) {
			ctx := gateway.WithHopToken(context.Background(), "wrong")
			if _, err := u.Invoke(ctx, &gateway.Call{Params: []byte(`{"message":"x"}`)}); err == nil || !strings.Contains(err.Error(), "credential") {
				t.Fatalf("a wrong hop token: %v, want refused", err)
			}
			ctx = gateway.WithHopToken(context.Background(), token)
			res, err := u.Invoke(ctx, &gateway.Call{Params: []byte(`{"message":"hello process"}`)})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = res.Stream.Close() }()
			var events int
			for {
				b, err := res.Stream.Recv(ctx)
				if errors.Is(err, io.EOF) {
					t.Fatal("the stream ended without chat.done")
				}
				if err != nil {
					t.Fatal(err)
				}
				var f sessionrpc.Frame
				_ = json.Unmarshal(b, &f)
				if f.Type == sessionrpc.TypeChatEvent {
					events++
					continue
				}
				if f.Type != sessionrpc.TypeChatDone || !strings.Contains(string(f.Payload), "hello process") ||
					!strings.Contains(string(f.Payload), "Tool with progress executed successfully") {
					t.Fatalf("terminal %s %s", f.Type, f.Payload)
				}
				break
			}
			if events < 10 {
				t.Fatalf("%d events before chat.done", events)
			}
		})
	}
	_ = supervised.Close()
	waitFor(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	})
}
