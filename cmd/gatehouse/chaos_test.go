package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/configs"
	"github.com/gatehouse-dev/gatehouse/internal/chaostest"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// breakersOf returns the breakers /readyz lists (open or half-open ones), whatever its
// status.
func (p *process) breakersOf(t *testing.T) []map[string]any {
	t.Helper()
	resp, err := http.Get(p.admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Breakers []map[string]any `json:"breakers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Breakers
}

// TestChaosGRPCBackendKilledUnderLoad kills the gRPC backend process while calls stream
// through the gateway process, and starts it again on the same address. The breaker
// opens and calls fail fast with CIRCUIT_OPEN; once the backend is back a probe closes the
// breaker and calls succeed; no call outlives its deadline. The enforcement is the shipped
// default's (its breakers, retries and admission sections, verbatim): what a user gets.
func TestChaosGRPCBackendKilledUnderLoad(t *testing.T) {
	// An open breaker answers at once; the bound is half the calls' 1s budget, room for a
	// refusal that waited on a loaded 2-core machine's scheduler (one took 366ms there).
	const fastRefusal = 500 * time.Millisecond
	backend, backendAddr := startBackend(t, "127.0.0.1:0")
	defer func() { _ = backend.Process.Kill(); _ = backend.Wait() }()
	shipped, err := configs.Sections("breakers", "retries", "admission")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	_ = os.WriteFile(cfg, []byte(fmt.Sprintf(`auth: {anonymous: {}}
routing:
  grpc:
    - name: calculator
      address: %q
      descriptors: {reflection: true}
      methods: {subtract: calculator.v1.CalculatorService/Subtract}
      unwrap: {subtract: result}
`, backendAddr)+shipped), 0o600)
	p := startProcess(t, cfg)

	// The shipped breaker stays open 5s before its probes: the run is long enough for
	// that, and bounded.
	load := chaostest.Start(chaostest.Options{
		URL:     p.rpc,
		Calls:   []chaostest.Call{{Method: "subtract", Params: "[5,3]"}},
		Workers: 8, Budget: time.Second, Pause: 5 * time.Millisecond, MaxCalls: 60000, MaxDuration: 16 * time.Second,
	})
	isOK := func(s chaostest.Sample) bool { return s.Err == nil && s.Code == 0 }
	if _, ok := load.WaitFor(time.Now(), 2*time.Second, isOK); !ok {
		t.Fatal("no call succeeded before the backend was killed")
	}

	_ = backend.Process.Kill()
	_ = backend.Wait()
	killed := time.Now()
	open, ok := load.WaitFor(killed, 3*time.Second, func(s chaostest.Sample) bool { return s.Code == int(schemas.CodeCircuitOpen) })
	if !ok {
		t.Fatal("the breaker did not open")
	}
	if open.Data["backend"] != "calculator" || open.Data["retry_after_ms"] == nil {
		t.Fatalf("CIRCUIT_OPEN data %v", open.Data)
	}
	waitFor(t, func() bool {
		bs := p.breakersOf(t)
		return len(bs) == 1 && bs[0]["backend"] == "calculator"
	})

	backend, _ = startBackend(t, backendAddr)
	restarted := time.Now()
	if _, ok := load.WaitFor(restarted, 9*time.Second, isOK); !ok {
		t.Fatal("calls did not succeed again after the backend came back")
	}
	waitFor(t, func() bool { return len(p.breakersOf(t)) == 0 })
	closed := time.Now()
	time.Sleep(300 * time.Millisecond)
	samples := load.Stop()

	if late := chaostest.Overdue(samples, 250*time.Millisecond); len(late) > 0 {
		t.Fatalf("%d of %d calls outlived their deadline, e.g. %+v", len(late), len(samples), late[0])
	}
	after, halfOpen := 0, 0
	for _, s := range samples {
		if s.Data["state"] == "half-open" {
			halfOpen++
		}
		switch {
		case s.Start.After(closed) && !isOK(s):
			t.Fatalf("a call after the breaker closed failed: %+v", s)
		case s.Start.After(closed):
			after++
		case s.Code == int(schemas.CodeCircuitOpen) && s.Took > fastRefusal:
			t.Fatalf("a refusal took %s: an open breaker fails fast", s.Took)
		case s.Code != 0 && s.Code != int(schemas.CodeCircuitOpen) && s.Code != int(schemas.CodeUnavailable):
			t.Fatalf("unexpected outcome %+v", s)
		}
	}
	if after < 10 {
		t.Fatalf("only %d calls ran after the breaker closed", after)
	}
	t.Logf("%d calls: %d ok, %d CIRCUIT_OPEN (%d while half-open), %d UNAVAILABLE; open %s after the kill, closed %s after the restart",
		len(samples), chaostest.Count(samples, 0), chaostest.Count(samples, int(schemas.CodeCircuitOpen)), halfOpen,
		chaostest.Count(samples, int(schemas.CodeUnavailable)), open.Start.Sub(killed).Round(time.Millisecond),
		closed.Sub(restarted).Round(time.Millisecond))
}
