package server

import (
	goruntime "runtime"
	"testing"
	"time"
)

// TestWSIdleHoldsOneGoroutine: an idle WebSocket connection holds its reader and nothing
// else — no writer goroutine (it runs only while there is something to send) and not the
// HTTP handler's (it returns after the upgrade). The clients are in this process but start
// no goroutines of their own; the margin absorbs the server's unrelated goroutines.
func TestWSIdleHoldsOneGoroutine(t *testing.T) {
	const conns = 40
	ts := start(t, baseConfig, nil)
	before := goruntime.NumGoroutine()
	for range conns {
		dialWS(t, ts, nil)
	}
	waitFor(t, func() bool { return ts.ws.Open() == conns })
	// Goroutines that end on their own (a writer started at the handshake, the handlers)
	// may still be finishing: the count must come down to the bound, however slowly.
	limit := before + conns + conns/4
	deadline := time.Now().Add(10 * time.Second)
	for n := goruntime.NumGoroutine(); n > limit; n = goruntime.NumGoroutine() {
		if time.Now().After(deadline) {
			t.Fatalf("%d idle connections hold %d goroutines (want at most one each, %d with the margin)", conns, n-before, limit-before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
