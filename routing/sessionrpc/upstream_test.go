package sessionrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/internal/mcptest"
	routing "github.com/gatehouse-dev/gatehouse/routing/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestMain fails the package if goroutines outlive its tests (the demo chat's MCP
// session takes a moment to end, which VerifyMain allows for).
func TestMain(m *testing.M) { mcptest.VerifyMain(m) }

const hopToken = "hop-secret-token"

var transports = []string{routing.TransportWebSocket, routing.TransportSSE}

// chatServer is a demo chat served on loopback.
type chatServer struct {
	chat *demo.Chat
	srv  *httptest.Server
}

// url returns the upstream URL of the server for transport.
func (c *chatServer) url(transport string) string {
	if transport == routing.TransportWebSocket {
		return "ws" + strings.TrimPrefix(c.srv.URL, "http") + "/session"
	}
	return c.srv.URL
}

func startChat(t testing.TB, opts demo.ChatOptions) *chatServer {
	t.Helper()
	chat, err := demo.NewChat(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(chat.Handler())
	t.Cleanup(func() {
		chat.Close()
		srv.Close()
	})
	return &chatServer{chat: chat, srv: srv}
}

func newUpstream(t testing.TB, cfg routing.UpstreamConfig) *routing.Upstream {
	t.Helper()
	u, err := routing.NewUpstream("demo", cfg, routing.UpstreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = u.Close() })
	return u
}

func call(payload string) *gateway.Call {
	return &gateway.Call{Method: routing.MethodPrefix + "demo", Params: []byte(payload)}
}

// collect reads the stream to its end: the frames, and the error that ended it (nil
// for io.EOF).
func collect(t testing.TB, ctx context.Context, s gateway.Stream) ([]sessionrpc.Frame, error) {
	t.Helper()
	defer func() { _ = s.Close() }()
	var frames []sessionrpc.Frame
	for {
		b, err := s.Recv(ctx)
		if errors.Is(err, io.EOF) {
			return frames, nil
		}
		if err != nil {
			return frames, err
		}
		var f sessionrpc.Frame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("frame %s: %v", b, err)
		}
		frames = append(frames, f)
	}
}

func eventType(t testing.TB, f sessionrpc.Frame) (string, map[string]any) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(f.Payload, &m); err != nil {
		t.Fatal(err)
	}
	typ, _ := m["type"].(string)
	return typ, m
}

func codeOf(err error) schemas.Code {
	if e, ok := errors.AsType[*gateway.Error](err); ok {
		return e.Code()
	}
	return 0
}

func TestUpstreamRelaysTheConversationInOrder(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := startChat(t, demo.ChatOptions{Token: hopToken})
			u := newUpstream(t, routing.UpstreamConfig{URL: cs.url(tr)})
			ctx := gateway.WithHopToken(context.Background(), hopToken)
			res, err := u.Invoke(ctx, call(`{"message":"hello gateway","sessionId":"s1","extra":{"kept":true}}`))
			if err != nil {
				t.Fatal(err)
			}
			frames, err := collect(t, ctx, res.Stream)
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			callID := ""
			for i, f := range frames[:len(frames)-1] {
				if f.Type != sessionrpc.TypeChatEvent {
					t.Fatalf("frame %d is %s, want chat.event (queueing messages are dropped)", i, f.Type)
				}
				typ, m := eventType(t, f)
				types = append(types, typ)
				switch typ {
				case sessionrpc.EventToolCall:
					callID, _ = m["id"].(string)
				case sessionrpc.EventToolOutput, sessionrpc.EventToolResult:
					if m["id"] != callID || callID == "" {
						t.Fatalf("%s names %v, want the earlier tool-call %q", typ, m["id"], callID)
					}
				}
			}
			want := []string{"status", "reasoning", "tool-call", "tool-output", "tool-output", "tool-output", "tool-result", "text-delta"}
			if strings.Join(types[:len(want)], ",") != strings.Join(want, ",") {
				t.Fatalf("events %v, want them to start %v", types, want)
			}
			if tail := strings.Join(types[len(types)-2:], ","); tail != "usage,checklist" {
				t.Fatalf("events end %s, want usage,checklist", tail)
			}
			last := frames[len(frames)-1]
			if last.Type != sessionrpc.TypeChatDone {
				t.Fatalf("last frame %s, want chat.done", last.Type)
			}
			var done map[string]any
			_ = json.Unmarshal(last.Payload, &done)
			if _, ok := done["taskId"]; ok {
				t.Errorf("chat.done kept the upstream's taskId: %s", last.Payload)
			}
			if text, _ := done["text"].(string); !strings.Contains(text, "hello gateway") || !strings.Contains(text, "Tool with progress executed successfully") {
				t.Errorf("chat.done text %q", text)
			}
			if st := cs.chat.Stats(); st.Completed != 1 || st.Started != 1 {
				t.Errorf("upstream stats %+v, want one request started and completed", st)
			}
		})
	}
}

func TestUpstreamHopToken(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := startChat(t, demo.ChatOptions{Token: hopToken})
			cases := []struct {
				name   string
				mode   string
				token  string
				wantOK bool
			}{
				{"minted token presented", "", hopToken, true},
				{"wrong token refused", "", "not-the-token", false},
				{"no token refused", "", "", false},
				{"mode none sends nothing", "none", hopToken, false},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					u := newUpstream(t, routing.UpstreamConfig{URL: cs.url(tr), DownstreamToken: gateway.DownstreamTokenConfig{Mode: c.mode}})
					ctx := gateway.WithHopToken(context.Background(), c.token)
					res, err := u.Invoke(ctx, call(`{"message":"x","options":{"noTool":true}}`))
					if !c.wantOK {
						if err == nil {
							_ = res.Stream.Close()
							t.Fatal("the upstream accepted the call")
						}
						if codeOf(err) != schemas.CodeUnavailable || !strings.Contains(err.Error(), "credential") {
							t.Fatalf("err %v, want UNAVAILABLE: refused the credential", err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if _, err := collect(t, ctx, res.Stream); err != nil {
						t.Fatal(err)
					}
				})
			}
			if st := cs.chat.Stats(); st.Refused != 3 {
				t.Errorf("the upstream refused %d requests, want 3", st.Refused)
			}
		})
	}
}

// waitUntil polls cond for up to 10s.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestUpstreamAbortReachesTheUpstream(t *testing.T) {
	for _, tr := range transports {
		for _, how := range []string{"cancel", "close", "deadline"} {
			t.Run(tr+"/"+how, func(t *testing.T) {
				cs := startChat(t, demo.ChatOptions{Delay: 20 * time.Millisecond})
				u := newUpstream(t, routing.UpstreamConfig{URL: cs.url(tr)})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if how == "deadline" {
					ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
					defer cancel()
				}
				payload := `{"message":"a long one","sessionId":"abort-` + how + `"}`
				if how == "cancel" { // a request without a session id is found by its request id
					payload = `{"message":"a long one"}`
				}
				res, err := u.Invoke(ctx, call(payload))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := res.Stream.Recv(ctx); err != nil {
					t.Fatal(err)
				}
				switch how {
				case "cancel":
					cancel()
					_, err := res.Stream.Recv(context.Background())
					if codeOf(err) != schemas.CodeCancelled {
						t.Fatalf("Recv after cancel: %v, want CANCELLED", err)
					}
				case "close":
					_ = res.Stream.Close()
				case "deadline":
					_, err := collect(t, context.Background(), res.Stream)
					if codeOf(err) != schemas.CodeDeadlineExceeded {
						t.Fatalf("Recv past the deadline: %v, want DEADLINE_EXCEEDED", err)
					}
				}
				_ = res.Stream.Close()
				waitUntil(t, "the upstream to see the abort", func() bool {
					st := cs.chat.Stats()
					return st.AbortMessages == 1 && st.Aborted == 1 && st.AbortedByMessage == 1
				})
				if st := cs.chat.Stats(); st.Completed != 0 {
					t.Fatalf("the aborted request completed upstream: %+v", st)
				}
			})
		}
	}
}

func TestUpstreamDyingMidStreamIsATerminalError(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := startChat(t, demo.ChatOptions{Delay: 20 * time.Millisecond})
			u := newUpstream(t, routing.UpstreamConfig{URL: cs.url(tr)})
			ctx := context.Background()
			res, err := u.Invoke(ctx, call(`{"message":"hi"}`))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := res.Stream.Recv(ctx); err != nil {
				t.Fatal(err)
			}
			cs.srv.CloseClientConnections() // the SSE response, abruptly
			cs.chat.Close()                 // the WebSocket connections (hijacked, so not closed above)
			frames, err := collect(t, ctx, res.Stream)
			if codeOf(err) != schemas.CodeUnavailable || !strings.Contains(err.Error(), "before the request ended") {
				t.Fatalf("after %d frames: %v, want UNAVAILABLE: closed before the request ended", len(frames), err)
			}
			for _, f := range frames {
				if f.Type != sessionrpc.TypeChatEvent {
					t.Fatalf("a %s frame from an upstream that died", f.Type)
				}
			}
			if _, err := res.Stream.Recv(ctx); !errors.Is(err, io.EOF) {
				t.Fatalf("Recv after the failure: %v, want io.EOF", err)
			}
		})
	}
}

func TestUpstreamRefusesAnOversizeFrame(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := startChat(t, demo.ChatOptions{})
			u := newUpstream(t, routing.UpstreamConfig{URL: cs.url(tr), MaxFrameBytes: 2048})
			ctx := context.Background()
			big := strings.Repeat("x", 3000) // echoed in one text-delta
			res, err := u.Invoke(ctx, call(`{"message":"`+big+`","options":{"noTool":true}}`))
			if err != nil {
				t.Fatal(err)
			}
			frames, err := collect(t, ctx, res.Stream)
			if codeOf(err) != schemas.CodePayloadTooLarge {
				t.Fatalf("after %d frames: %v, want PAYLOAD_TOO_LARGE", len(frames), err)
			}
			if len(frames) < 2 {
				t.Fatalf("only %d frames before the oversize one: the small ones must pass", len(frames))
			}
		})
	}
}

func TestUpstreamUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			url := "ws://" + addr + "/session"
			if tr == routing.TransportSSE {
				url = "http://" + addr
			}
			u := newUpstream(t, routing.UpstreamConfig{URL: url, DialTimeout: time.Second})
			_, err := u.Invoke(context.Background(), call(`{"message":"x"}`))
			if codeOf(err) != schemas.CodeUnavailable || !errors.Is(err, gateway.ErrNotSent) {
				t.Fatalf("err %v, want UNAVAILABLE marked not sent", err)
			}
			if err := u.Ready(context.Background()); err == nil {
				t.Fatal("Ready with nothing listening")
			}
		})
	}
}

func TestUpstreamReadyAndParams(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := startChat(t, demo.ChatOptions{Token: hopToken})
			u := newUpstream(t, routing.UpstreamConfig{URL: cs.url(tr)})
			if err := u.Ready(context.Background()); err != nil {
				t.Fatalf("Ready: %v", err)
			}
			for _, bad := range []string{``, `[]`, `"x"`, `{"message":`} {
				if _, err := u.Invoke(context.Background(), call(bad)); codeOf(err) != schemas.CodeInvalidParams {
					t.Errorf("params %q: %v, want INVALID_PARAMS", bad, err)
				}
			}
			_ = u.Close()
			if _, err := u.Invoke(context.Background(), call(`{}`)); codeOf(err) != schemas.CodeUnavailable {
				t.Errorf("Invoke after Close: %v, want UNAVAILABLE", err)
			}
			if u.Ready(context.Background()) == nil {
				t.Error("Ready after Close")
			}
		})
	}
}

func TestUpstreamConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  routing.UpstreamConfig
		want string // "" for valid
	}{
		{"websocket", routing.UpstreamConfig{URL: "ws://127.0.0.1:7391/session"}, ""},
		{"sse by scheme", routing.UpstreamConfig{URL: "https://agent.example/"}, ""},
		{"no url", routing.UpstreamConfig{}, "absolute"},
		{"scheme and transport disagree", routing.UpstreamConfig{URL: "http://127.0.0.1:1", Transport: "websocket"}, "ws://"},
		{"unknown transport", routing.UpstreamConfig{URL: "ws://127.0.0.1:1", Transport: "grpc"}, "not one of"},
		{"frame bound too small", routing.UpstreamConfig{URL: "ws://127.0.0.1:1", MaxFrameBytes: 10}, "max_frame_bytes"},
		{"frame bound too large", routing.UpstreamConfig{URL: "ws://127.0.0.1:1", MaxFrameBytes: 1 << 30}, "max_frame_bytes"},
		{"negative timeout", routing.UpstreamConfig{URL: "ws://127.0.0.1:1", IdleTimeout: -1}, "idle_timeout"},
		{"args without command", routing.UpstreamConfig{URL: "ws://127.0.0.1:1", Args: []string{"x"}}, "need a command"},
		{"hop token in the clear", routing.UpstreamConfig{URL: "ws://agent.example/session"}, "in the clear"},
		{"in the clear allowed", routing.UpstreamConfig{URL: "ws://agent.example/session", AllowPlaintextHopToken: true}, ""},
		{"in the clear without a token", routing.UpstreamConfig{URL: "http://agent.example", DownstreamToken: gateway.DownstreamTokenConfig{Mode: "none"}}, ""},
		{"bad token mode", routing.UpstreamConfig{URL: "wss://agent.example", DownstreamToken: gateway.DownstreamTokenConfig{Mode: "x"}}, "downstream_token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if c.want == "" && err != nil {
				t.Fatalf("valid config refused: %v", err)
			}
			if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("err %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

func TestUpstreamCommandIsSupervised(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep command")
	}
	u, err := routing.NewUpstream("proc", routing.UpstreamConfig{URL: "ws://127.0.0.1:1/session", Command: "sleep", Args: []string{"60"},
		StopGrace: time.Second}, routing.UpstreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Running, but not answering status.get: not ready, for the right reason.
	waitUntil(t, "the command to start", func() bool {
		err := u.Ready(context.Background())
		return err != nil && !strings.Contains(err.Error(), "not running")
	})
	start := time.Now()
	_ = u.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v", d)
	}

	failing, err := routing.NewUpstream("proc", routing.UpstreamConfig{URL: "ws://127.0.0.1:1/session", Command: "sh", Args: []string{"-c", "exit 3"},
		RestartDelay: 20 * time.Millisecond}, routing.UpstreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = failing.Close() }()
	waitUntil(t, "the exit to be reported", func() bool {
		err := failing.Ready(context.Background())
		return err != nil && strings.Contains(err.Error(), "exit status 3")
	})
}

func TestUpstreamIdleTimeout(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := startChat(t, demo.ChatOptions{Delay: time.Second})
			u := newUpstream(t, routing.UpstreamConfig{URL: cs.url(tr), IdleTimeout: 100 * time.Millisecond})
			ctx := context.Background()
			res, err := u.Invoke(ctx, call(`{"message":"slow"}`))
			if err != nil {
				t.Fatal(err)
			}
			frames, err := collect(t, ctx, res.Stream)
			if codeOf(err) != schemas.CodeUnavailable || !strings.Contains(err.Error(), "idle_timeout") {
				t.Fatalf("after %d frames: %v, want UNAVAILABLE: silent for longer than idle_timeout", len(frames), err)
			}
			waitUntil(t, "the upstream to drop the request", func() bool { return cs.chat.Stats().Aborted == 1 })
		})
	}
}
