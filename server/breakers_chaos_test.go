package server

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/chaostest"
	"github.com/gatehouse-dev/gatehouse/internal/mcptest"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// buildMCPFixture builds the mcp-go fixture server of routing/mcpbackend into a temporary
// directory of t.
func buildMCPFixture(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fixture")
	cmd := exec.Command("go", "build", "-o", bin, "./routing/mcpbackend/testdata/fixture")
	cmd.Dir = mcptest.RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the MCP fixture: %v\n%s", err, out)
	}
	return bin
}

// TestChaosFlappingMCPServer kills a stdio MCP server three times under load. Each time
// its breaker (mcp/flaky) opens and calls to its tools fail fast with CIRCUIT_OPEN, then a
// probe finds the restarted server and the breaker closes; the other server's tools answer
// throughout, and no call outlives its deadline.
func TestChaosFlappingMCPServer(t *testing.T) {
	bin := buildMCPFixture(t)
	ts := start(t, fmt.Sprintf(`
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  anonymous: {}
routing:
  mcp:
    direct_zones: [external]
    servers:
      - {name: flaky, stdio: {command: %[1]q, env: {FIXTURE_NAME: flaky}}, restart: {initial: 300ms, max: 300ms}}
      - {name: steady, stdio: {command: %[1]q, env: {FIXTURE_NAME: steady}}}
breakers:
  default: {min_requests: 3, failure_ratio: 0.5, window: 5s, open_duration: 200ms, half_open_probes: 1}
`, bin), nil)
	load := chaostest.Start(chaostest.Options{
		URL: ts.base + "/rpc",
		Calls: []chaostest.Call{
			{Method: "mcp.flaky__echo", Params: `{"message":"f"}`},
			{Method: "mcp.steady__echo", Params: `{"message":"s"}`},
		},
		Workers: 6, Budget: time.Second, Pause: 5 * time.Millisecond, MaxCalls: 40000, MaxDuration: 30 * time.Second,
	})
	isFlaky := func(s chaostest.Sample) bool { return s.Method == "mcp.flaky__echo" }
	for flap := range 3 {
		pid := flakyPID(t, ts)
		killed := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		open, ok := load.WaitFor(killed, 5*time.Second, func(s chaostest.Sample) bool {
			return isFlaky(s) && s.Code == int(schemas.CodeCircuitOpen)
		})
		if !ok {
			t.Fatalf("flap %d: the breaker did not open", flap)
		}
		if open.Data["backend"] != "mcp/flaky" {
			t.Fatalf("flap %d: CIRCUIT_OPEN names %v", flap, open.Data["backend"])
		}
		if _, ok := load.WaitFor(open.Start, 6*time.Second, func(s chaostest.Sample) bool { return isFlaky(s) && s.Code == 0 }); !ok {
			t.Fatalf("flap %d: the breaker did not close again", flap)
		}
	}
	samples := load.Stop()
	const fastRefusal = 500 * time.Millisecond
	if late := chaostest.Overdue(samples, 200*time.Millisecond); len(late) > 0 {
		t.Fatalf("%d of %d calls outlived their deadline, e.g. %+v", len(late), len(samples), late[0])
	}
	for _, s := range samples {
		switch {
		case !isFlaky(s) && s.Code != 0:
			t.Fatalf("the steady server's tool failed: %+v", s)
		case s.Code == int(schemas.CodeCircuitOpen) && s.Took > fastRefusal:
			// Half the call budget: a refusal that waited for the dead server would take it all.
			t.Fatalf("a refusal took %s: an open breaker fails fast", s.Took)
		case s.Code != 0 && s.Code != int(schemas.CodeCircuitOpen) && s.Code != int(schemas.CodeUnavailable):
			t.Fatalf("unexpected outcome %+v", s)
		}
	}
	t.Logf("%d calls: %d ok, %d CIRCUIT_OPEN, %d UNAVAILABLE", len(samples), chaostest.Count(samples, 0),
		chaostest.Count(samples, int(schemas.CodeCircuitOpen)), chaostest.Count(samples, int(schemas.CodeUnavailable)))
}

// flakyPID asks the flaky server for its process id, once its restarted process serves.
func flakyPID(t *testing.T, ts *testServer) int {
	t.Helper()
	var pid int
	waitFor(t, func() bool {
		_, _, body := ts.post(`{"jsonrpc":"2.0","method":"mcp.flaky__pid","id":1}`)
		_, after, ok := strings.Cut(body, `"text":"`)
		if !ok {
			return false
		}
		n, err := strconv.Atoi(strings.SplitN(after, `"`, 2)[0])
		pid = n
		return err == nil
	})
	return pid
}
