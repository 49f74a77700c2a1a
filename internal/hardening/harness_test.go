package hardening

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

const demoConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  anonymous: {}
routing:
  demo: {}
`

// TestHarness: a gateway starts, answers, and a run that made calls on a fresh
// connection each time comes back to its baseline once the connections are closed.
func TestHarness(t *testing.T) {
	g := Start(t, demoConfig)
	call := func(c *http.Client) map[string]any {
		resp, err := c.Post(g.Base+"/rpc", "application/json", bytes.NewBufferString(`{"jsonrpc":"2.0","id":1,"method":"subtract","params":[5,3]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		return out
	}
	warm := &http.Client{}
	if got := call(warm)["result"]; got != 2.0 {
		t.Fatalf("subtract: %v", got)
	}
	warm.CloseIdleConnections()
	base := Take(func() int { return g.State.Len() })
	t.Log(base)
	for range Iterations(t, 20) {
		c := &http.Client{Transport: &http.Transport{}}
		call(c)
		c.CloseIdleConnections()
	}
	base.Check(t, 5*time.Second, Slack{Goroutines: 2, FDs: 2})
	if l := Leaks(`{"code":-32603,"message":"internal error"}`); len(l) != 0 {
		t.Fatalf("a clean message leaks %q", l)
	}
	if l := Leaks(`dial tcp 127.0.0.1:50061: at /work/main/server/x.go:12`, "127.0.0.1:50061"); len(l) != 3 {
		t.Fatalf("want 3 leaks, got %q", l)
	}
}
