package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gorilla/websocket"
)

// BenchmarkSessionIdle measures what an idle session connection (GET /session, WebSocket)
// costs the gateway, as BenchmarkWSIdle does for /ws: n clients in a separate process
// open a connection each and send nothing; B/idle-session is the growth of live heap and
// stacks per connection after a forced GC, RSS-B/idle-session that of the resident set.
func BenchmarkSessionIdle(b *testing.B) {
	n := defaultIdleConns
	bin := filepath.Join(b.TempDir(), "idleclient")
	if out, err := exec.Command("go", "build", "-o", bin, "../internal/idleclient").CombinedOutput(); err != nil {
		b.Fatalf("build idleclient: %v\n%s", err, out)
	}
	b.ResetTimer()
	for range b.N {
		cfg, err := Parse("bench.yaml", []byte(fmt.Sprintf(`
server: {boundary: {addr: "127.0.0.1:0", max_connections: %d}, admin: {addr: "127.0.0.1:0"}}
log: {level: error}
auth: {anonymous: {}}
routing: {demo: {}}
session: {routes: [{name: calc, capability: {method: subtract}}]}
`, n+100)))
		if err != nil {
			b.Fatal(err)
		}
		srv, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx) }()
		cost := measureIdle(b, bin, n, []string{"-url", "ws://" + srv.BoundaryAddr().String() + "/session"},
			func() int { c, _ := srv.session.Open(); return c })
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
		b.ReportMetric(cost.heap, "B/idle-session")
		b.ReportMetric(cost.stacks, "stack-B/idle-session")
		b.ReportMetric(cost.rss, "RSS-B/idle-session")
		b.ReportMetric(cost.goroutines, "goroutines/idle-session")
	}
}

// BenchmarkSessionUpstream: one conversation per op, 200 text-delta events and chat.done,
// from demo-chat (no tool call, no delay) to a WebSocket client — read straight from
// demo-chat (direct), and through the gateway's /session proxying to it over WebSocket
// (gateway: the face, the pipeline, the upstream target). Both read every message; the
// events/s of the two, same run, make the ratio of docs/benchmarks.md.
func BenchmarkSessionUpstream(b *testing.B) {
	const deltas = 200
	chat, err := demo.NewChat(context.Background(), demo.ChatOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer chat.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = chat.Serve(ctx, ln) }()
	cfg, err := Parse("bench.yaml", []byte(fmt.Sprintf(`
server: {boundary: {addr: "127.0.0.1:0"}, admin: {addr: "127.0.0.1:0"}}
log: {level: error}
auth: {anonymous: {}}
session:
  routes: [{name: chat, upstream: {url: "ws://%s/session"}}]
`, ln.Addr())))
	if err != nil {
		b.Fatal(err)
	}
	srv, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	start := fmt.Sprintf(`{"id":"rpc_%%d","type":"chat.start","payload":{"message":"bench","options":{"noTool":true,"repeat":%d}}}`, deltas)
	run := func(b *testing.B, url string) {
		c, resp, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			b.Fatal(err)
		}
		_ = resp.Body.Close()
		defer c.Close()
		events := 0
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			if err := c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, start, i)); err != nil {
				b.Fatal(err)
			}
			for {
				_, msg, err := c.ReadMessage()
				if err != nil {
					b.Fatal(err)
				}
				if bytes.Contains(msg, []byte(`"type":"chat.event"`)) {
					events++
				} else if bytes.Contains(msg, []byte(`"type":"chat.done"`)) {
					break
				} else if bytes.Contains(msg, []byte(`"type":"chat.error"`)) {
					b.Fatalf("%s", msg)
				}
			}
		}
		b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	}
	b.Run("direct", func(b *testing.B) { run(b, "ws://"+ln.Addr().String()+"/session") })
	b.Run("gateway", func(b *testing.B) { run(b, "ws://"+srv.BoundaryAddr().String()+"/session") })
}
