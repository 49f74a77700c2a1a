package server

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"testing"
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
