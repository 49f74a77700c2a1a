package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// switchTarget is a test backend whose answer the test switches: an error, or "ok". It
// counts the attempts that reached it.
type switchTarget struct {
	name string
	mu   sync.Mutex
	err  error
	// failOnce, when set, is returned once, before err applies.
	failOnce error
	attempts int
}

func (s *switchTarget) Name() string { return s.name }

func (s *switchTarget) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if err := s.failOnce; err != nil {
		s.failOnce = nil
		return nil, err
	}
	if s.err != nil {
		return nil, s.err
	}
	return gateway.NewResult([]byte(`"ok"`)), nil
}

func (s *switchTarget) set(err, once error) {
	s.mu.Lock()
	s.err, s.failOnce, s.attempts = err, once, 0
	s.mu.Unlock()
}

func (s *switchTarget) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

var errFlakyDown = gateway.NewError(schemas.CodeUnavailable).With("backend", "flaky")

// readyzBody returns /readyz's status and body.
func (ts *testServer) readyzBody() (int, map[string]any) {
	ts.t.Helper()
	resp, err := http.Get(ts.admin + "/readyz")
	if err != nil {
		ts.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		ts.t.Fatal(err)
	}
	return resp.StatusCode, body
}

// TestBreakerOverHTTP: a backend that keeps failing opens its breaker; callers get
// CIRCUIT_OPEN with retry_after_ms at once, /readyz lists the breaker and stays ready; once
// the backend heals, a probe closes the breaker. Built-in targets have no breaker.
func TestBreakerOverHTTP(t *testing.T) {
	flaky := &switchTarget{name: "flaky"}
	ts := start(t, baseConfig+`
breakers:
  default: {min_requests: 3, failure_ratio: 0.5, window: 10s, open_duration: 400ms, half_open_probes: 1}
`, map[string]gateway.Target{"flaky.get": flaky})
	call := func() response {
		_, _, body := ts.post(`{"jsonrpc":"2.0","method":"flaky.get","id":1}`)
		return decodeOne(t, body)
	}
	flaky.set(errFlakyDown, nil)
	for i := range 3 {
		if r := call(); r.Error == nil || r.Error.Code != int(schemas.CodeUnavailable) {
			t.Fatalf("call %d: %+v", i, r.Error)
		}
	}
	r := call()
	if r.Error == nil || r.Error.Code != int(schemas.CodeCircuitOpen) || r.Error.Data["backend"] != "flaky" ||
		r.Error.Data["state"] != "open" || r.Error.Data["retry_after_ms"].(float64) <= 0 || r.Error.Data["retry_after_ms"].(float64) > 400 {
		t.Fatalf("with the breaker open: %+v", r.Error)
	}
	if n := flaky.count(); n != 3 {
		t.Fatalf("%d calls reached the backend; the open breaker let one through", n)
	}
	status, body := ts.readyzBody()
	breakers, _ := body["breakers"].([]any)
	if status != http.StatusOK || len(breakers) != 1 || breakers[0].(map[string]any)["backend"] != "flaky" ||
		breakers[0].(map[string]any)["state"] != "open" {
		t.Fatalf("readiness with an open breaker: %d %v", status, body)
	}
	// The demo target is in the process: it has no breaker.
	if _, _, out := ts.post(`{"jsonrpc":"2.0","method":"subtract","params":[3,1],"id":2}`); !strings.Contains(out, `"result":2`) {
		t.Fatalf("demo subtract: %s", out)
	}

	flaky.set(nil, nil)
	waitFor(t, func() bool { return call().Error == nil })
	if _, body := ts.readyzBody(); body["breakers"] != nil {
		t.Fatalf("readiness once closed: %v", body)
	}
	for _, s := range ts.runningBreakers().States() {
		if s.Backend != "flaky" {
			t.Fatalf("a breaker for %q: only the flaky backend should have one", s.Backend)
		}
	}
}

// runningBreakers returns the breakers of the configuration the server runs now.
func (ts *testServer) runningBreakers() *resilience.Breakers {
	rt := ts.acquire()
	defer rt.release()
	return rt.breakers
}

// TestRetryByMutationClass: a call that failed before reaching its backend is retried once
// when the policy classes it READ_ONLY or IDEMPOTENT_WRITE or it carries an idempotency
// key, and not otherwise.
func TestRetryByMutationClass(t *testing.T) {
	flaky := &switchTarget{name: "flaky"}
	ts := start(t, baseConfig+`
retries: {backoff: 1ms}
policy:
  default: allow
  zones:
    external: {reach: [builtin]}
  rules:
    - {match: {method: flaky.read}, mutation: READ_ONLY}
    - {match: {method: flaky.put}, mutation: IDEMPOTENT_WRITE}
    - {match: {method: flaky.create}, mutation: NON_IDEMPOTENT_WRITE}
`, map[string]gateway.Target{"flaky.read": flaky, "flaky.put": flaky, "flaky.create": flaky})
	notSent := errFlakyDown.Wrap(errors.New("connection refused")).NotSent()
	tests := []struct {
		method, params string
		once           error
		attempts       int
	}{
		{"flaky.read", `{}`, notSent, 2},
		{"flaky.put", `{}`, notSent, 2},
		{"flaky.create", `{}`, notSent, 1},
		{"flaky.create", `{"idempotency_key":"k-1"}`, notSent, 2},
		{"flaky.read", `{}`, errFlakyDown, 1}, // may have been sent
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.params, func(t *testing.T) {
			flaky.set(nil, tt.once)
			_, _, body := ts.post(`{"jsonrpc":"2.0","method":"` + tt.method + `","params":` + tt.params + `,"id":1}`)
			r := decodeOne(t, body)
			if n := flaky.count(); n != tt.attempts {
				t.Fatalf("%d attempts, want %d (%s)", n, tt.attempts, body)
			}
			if (tt.attempts == 2) != (r.Error == nil) {
				t.Fatalf("response %s", body)
			}
		})
	}
}

func TestResilienceConfig(t *testing.T) {
	cfg, err := Parse("r.yaml", []byte(`
routing:
  grpc:
    - {name: calc, address: "127.0.0.1:1", descriptors: {reflection: true}, methods: {subtract: calculator.v1.CalculatorService/Subtract}}
  mcp:
    servers:
      - {name: files, stdio: {command: /bin/true}}
breakers:
  default: {open_duration: 2s}
  backends:
    calc: {failure_ratio: 0.25, min_requests: 10}
    mcp/files: {window: 30s}
retries:
  budget: {ratio: 0.2}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Breakers.For("calc"); got.FailureRatio != 0.25 || got.MinRequests != 10 || got.OpenDuration != 2*time.Second ||
		got.Window != resilience.DefaultBreakerWindow {
		t.Errorf("calc: %+v", got)
	}
	if got := cfg.Breakers.For("mcp/files"); got.Window != 30*time.Second || got.FailureRatio != resilience.DefaultFailureRatio {
		t.Errorf("mcp/files: %+v", got)
	}
	if got := cfg.Retries.WithDefaults(); got.Budget.Ratio != 0.2 || got.Budget.MinRetries != resilience.DefaultMinRetries || got.Backoff != resilience.DefaultRetryBackoff {
		t.Errorf("retries: %+v", got)
	}
	if cfg, err := Parse("r.yaml", []byte("routing: {demo: {}}\n")); err != nil || cfg.Breakers != nil || cfg.Retries != nil {
		t.Errorf("absent sections: %v, %v", cfg, err)
	}

	bad := []struct{ name, yaml, want string }{
		{"unknown backend", "breakers:\n  backends:\n    calc: {}\n", `r.yaml:3:5: breakers.backends.calc: "calc" is not a backend`},
		{"an MCP server named without mcp/", "routing:\n  mcp:\n    servers: [{name: files, stdio: {command: /bin/true}}]\nbreakers:\n  backends:\n    files: {}\n", `breakers.backends.files`},
		{"ratio 0", "breakers:\n  default: {failure_ratio: 0}\n", "breakers.default.failure_ratio"},
		{"ratio above 1", "breakers:\n  default: {failure_ratio: 1.5}\n", "breakers.default.failure_ratio"},
		{"window too short", "breakers:\n  default: {window: 50ms}\n", "breakers.default.window"},
		{"probes 0", "breakers:\n  default: {half_open_probes: 0}\n", "breakers.default.half_open_probes"},
		{"unknown breaker key", "breakers:\n  default: {ratio: 0.5}\n", "ratio"},
		{"retry budget ratio 0", "retries:\n  budget: {ratio: 0}\n", "retries.budget.ratio"},
		{"retry backoff too long", "retries: {backoff: 11s}\n", "retries.backoff"},
		{"unknown retries key", "retries: {attempts: 2}\n", "attempts"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("r.yaml", []byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one with %q", err, tt.want)
			}
		})
	}
}
