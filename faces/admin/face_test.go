package admin

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/auth/approval"
	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// fakeGateway is a gateway whose answers the test sets; it counts the runtimes held.
type fakeGateway struct {
	serving, draining bool
	ping              error
	metrics           http.Handler
	pprofScope        string
	rt                fakeRuntime
	held              atomic.Int64
}

func (g *fakeGateway) Acquire() Runtime {
	g.held.Add(1)
	rt := g.rt
	rt.held = &g.held
	return rt
}
func (g *fakeGateway) Serving() bool                   { return g.serving }
func (g *fakeGateway) Draining() bool                  { return g.draining }
func (g *fakeGateway) PingState(context.Context) error { return g.ping }
func (g *fakeGateway) StateBackend() string            { return "redis" }
func (g *fakeGateway) Revocations() *auth.Revocations  { return nil }
func (g *fakeGateway) KeyRing() *auth.KeyRing          { return nil }
func (g *fakeGateway) Metrics() http.Handler           { return g.metrics }
func (g *fakeGateway) PprofScope() string              { return g.pprofScope }

type fakeRuntime struct {
	health  Health
	tripped []resilience.BreakerState
	authErr error
	scopes  []string
	held    *atomic.Int64
}

func (r fakeRuntime) Pipeline() *faces.Pipeline {
	return &faces.Pipeline{MaxBodyBytes: 1 << 10, Limits: jsonrpc.Limits{MaxDepth: 8, MaxStringBytes: 1 << 10, MaxBatch: 4}}
}

func (r fakeRuntime) Authenticator() gateway.Authenticator { return r }

func (r fakeRuntime) Authenticate(context.Context, gateway.Credentials) (gateway.Principal, error) {
	return gateway.Principal{Subject: "ops", Scopes: r.scopes}, r.authErr
}

func (r fakeRuntime) Release()                                   { r.held.Add(-1) }
func (r fakeRuntime) Health(context.Context) Health              { return r.health }
func (r fakeRuntime) TrippedBreakers() []resilience.BreakerState { return r.tripped }
func (r fakeRuntime) ApprovalStore() approval.Store              { return nil }
func (r fakeRuntime) ApprovalScope() string                      { return "admin.approvals" }

func do(t *testing.T, gw *fakeGateway, method, path, ct, body string) (int, http.Header, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	rec := httptest.NewRecorder()
	New(gw, slog.New(slog.DiscardHandler)).ServeHTTP(rec, req)
	if n := gw.held.Load(); n != 0 {
		t.Errorf("%s %s: %d runtimes still held", method, path, n)
	}
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, rec.Header(), string(b)
}

func TestProbes(t *testing.T) {
	tests := []struct {
		name       string
		gw         *fakeGateway
		path       string
		wantStatus int
		wantBody   string
	}{
		{"healthz", &fakeGateway{}, "/healthz", http.StatusOK, `{"status":"ok"}`},
		{"starting", &fakeGateway{}, "/readyz", http.StatusServiceUnavailable, `{"status":"starting"}`},
		{"draining", &fakeGateway{serving: true, draining: true}, "/readyz", http.StatusServiceUnavailable, `{"status":"draining"}`},
		{"ready", &fakeGateway{serving: true}, "/readyz", http.StatusOK, `{"status":"ready"}`},
		{"only target down", &fakeGateway{serving: true, rt: fakeRuntime{health: Health{Targets: map[string]error{"b": errors.New("down")}}}},
			"/readyz", http.StatusServiceUnavailable, `{"status":"not ready","targets":{"b":{"up":false,"reason":"down"}}}`},
		{"every target up", &fakeGateway{serving: true, rt: fakeRuntime{health: Health{Targets: map[string]error{"a": nil, "mcp/b": nil}}}},
			"/readyz", http.StatusOK, `{"status":"ready","targets":{"a":{"up":true},"mcp/b":{"up":true}}}`},
		{"one of two down, rule any", &fakeGateway{serving: true, rt: fakeRuntime{health: Health{Targets: map[string]error{"a": nil, "mcp/b": errors.New("down")}}}},
			"/readyz", http.StatusOK, `{"status":"degraded","targets":{"a":{"up":true},"mcp/b":{"up":false,"reason":"down"}}}`},
		{"every target down, rule any", &fakeGateway{serving: true, rt: fakeRuntime{health: Health{Targets: map[string]error{"a": errors.New("x"), "mcp/b": errors.New("y")}}}},
			"/readyz", http.StatusServiceUnavailable, `{"status":"not ready","targets":{"a":{"up":false,"reason":"x"},"mcp/b":{"up":false,"reason":"y"}}}`},
		{"one of two down, rule all", &fakeGateway{serving: true, rt: fakeRuntime{health: Health{All: true, Targets: map[string]error{"a": nil, "mcp/b": errors.New("down")}}}},
			"/readyz", http.StatusServiceUnavailable, `{"status":"not ready","targets":{"a":{"up":true},"mcp/b":{"up":false,"reason":"down"}}}`},
		{"every target up, rule all", &fakeGateway{serving: true, rt: fakeRuntime{health: Health{All: true, Targets: map[string]error{"a": nil}}}},
			"/readyz", http.StatusOK, `{"status":"ready","targets":{"a":{"up":true}}}`},
		{"one down and state out of reach", &fakeGateway{serving: true, ping: errors.New("refused"), rt: fakeRuntime{health: Health{Targets: map[string]error{"a": nil, "b": errors.New("down")}}}},
			"/readyz", http.StatusServiceUnavailable, `{"state":{"backend":"redis","error":"refused"},"status":"not ready","targets":{"a":{"up":true},"b":{"up":false,"reason":"down"}}}`},
		{"state out of reach", &fakeGateway{serving: true, ping: errors.New("refused")},
			"/readyz", http.StatusServiceUnavailable, `{"state":{"backend":"redis","error":"refused"},"status":"not ready"}`},
		{"breaker open, still ready", &fakeGateway{serving: true, rt: fakeRuntime{tripped: []resilience.BreakerState{{Backend: "b", State: resilience.BreakerOpen}}}},
			"/readyz", http.StatusOK, `{"breakers":[{"backend":"b","state":"open"}],"status":"ready"}`},
		{"metrics off", &fakeGateway{}, "/metrics", http.StatusNotFound, "404 page not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, h, body := do(t, tt.gw, http.MethodGet, tt.path, "", "")
			if status != tt.wantStatus || strings.TrimSpace(body) != tt.wantBody {
				t.Fatalf("got %d %s, want %d %s", status, body, tt.wantStatus, tt.wantBody)
			}
			if tt.path != "/metrics" && h.Get("Content-Type") != "application/json" {
				t.Fatalf("Content-Type %q", h.Get("Content-Type"))
			}
		})
	}
}

func TestMetricsHandler(t *testing.T) {
	gw := &fakeGateway{metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "up 1\n") })}
	if status, _, body := do(t, gw, http.MethodGet, "/metrics", "", ""); status != http.StatusOK || body != "up 1\n" {
		t.Fatalf("got %d %q", status, body)
	}
}

func TestRPC(t *testing.T) {
	tests := []struct {
		name       string
		rt         fakeRuntime
		ct, body   string
		wantStatus int
		wantCode   schemas.Code
	}{
		{"not JSON", fakeRuntime{}, "text/plain", `{}`, http.StatusUnsupportedMediaType, schemas.CodeUnsupportedMedia},
		{"refused before the body is read", fakeRuntime{authErr: gateway.NewError(schemas.CodeAuthentication)}, "application/json", `not json`,
			http.StatusUnauthorized, schemas.CodeAuthentication},
		{"too large", fakeRuntime{}, "application/json", strings.Repeat(" ", 2<<10), http.StatusRequestEntityTooLarge, schemas.CodePayloadTooLarge},
		{"unknown method", fakeRuntime{}, "application/json", `{"jsonrpc":"2.0","id":1,"method":"admin.nope"}`, http.StatusOK, schemas.CodeMethodNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, h, body := do(t, &fakeGateway{rt: tt.rt}, http.MethodPost, "/rpc", tt.ct, tt.body)
			if status != tt.wantStatus || !strings.Contains(body, `"code":`+strconv.Itoa(int(tt.wantCode))) {
				t.Fatalf("got %d %s, want %d code %d", status, body, tt.wantStatus, tt.wantCode)
			}
			if h.Get("X-Trace-Id") == "" {
				t.Fatal("no X-Trace-Id")
			}
		})
	}
}

func TestRPCBatch(t *testing.T) {
	body := `[{"jsonrpc":"2.0","id":1,"method":"admin.nope"},{"jsonrpc":"2.0","method":"admin.nope"},{"jsonrpc":"2.0","id":2,"method":"x"}]`
	status, _, got := do(t, &fakeGateway{}, http.MethodPost, "/rpc", "application/json", body)
	if status != http.StatusOK || !strings.HasPrefix(got, "[") || !strings.HasSuffix(got, `"id":2}]`) ||
		strings.Count(got, `"id":`) != 2 || !strings.Contains(got, `"id":1},{`) {
		t.Fatalf("got %d %s", status, got)
	}
}
