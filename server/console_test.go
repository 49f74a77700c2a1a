package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth/approval"
	"github.com/gatehouse-dev/gatehouse/internal/consoletest"
)

// consoleYAML is a gateway with the console on: alice may delegate and call order.delete
// (held for approval, DESTRUCTIVE); ops is the operator (console and approvals). %s, %s,
// %s are the API key hashes of alice, ops and viewer (an operator without
// admin.approvals).
const consoleYAML = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin:
    addr: "127.0.0.1:0"
    console: {enabled: true, jaeger_url: "http://127.0.0.1:16686", events_interval: 300ms}
  shutdown_grace: 5s
auth:
  api_keys:
    - {name: alice, hash: %q, scopes: [orders]}
    - {name: ops, hash: %q, scopes: [admin.approvals, admin.operator]}
    - {name: viewer, hash: %q, scopes: [admin.approvals]}
routing:
  demo: {}
nekte: {}
deadline: {default: 10m, max: 10m}
log: {level: debug}
policy:
  default: allow
  rules:
    - {id: delete, match: {method: order.delete}, scopes: [orders], mutation: DESTRUCTIVE}
approvals: {poll_interval: 5ms}
`

// startConsole starts a gateway of consoleYAML with the hold capability and order.delete.
func startConsole(t *testing.T) *testServer {
	t.Helper()
	cfg, err := Parse("console.yaml", fmt.Appendf(nil, consoleYAML, apiKeyHash("alice-key"), apiKeyHash(opsKey), apiKeyHash("viewer-key")))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	targets := holdTargets()
	targets["order.delete"] = &probe{}
	return startOptions(t, cfg, Options{Targets: targets}, nil)
}

// delegateHold delegates the hold capability as alice, whose stream stays open until the
// task ends; it returns once the task runs. The stream is read until it ends or ctx does.
func delegateHold(ctx context.Context, t *testing.T, ts *testServer, id string) <-chan string {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"nekte.delegate","params":{"task":{"id":%q,"desc":"hold","timeout_ms":600000,"budget":{"max_tokens":500,"detail_level":"full"},"cap":"hold"}}}`, id)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.base+"/rpc", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-API-Key", "alice-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		t.Fatalf("delegate: HTTP %d %s", resp.StatusCode, b)
	}
	out := make(chan string, 1)
	go func() {
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		out <- string(b)
	}()
	return out
}

// operatorTask returns the task id as admin.tasks.list reports it, nil when not listed.
func operatorTask(t *testing.T, ts *testServer, id string) map[string]any {
	t.Helper()
	var l struct {
		Tasks []map[string]any `json:"tasks"`
	}
	if err := json.Unmarshal(ts.ops("admin.tasks.list", `{}`), &l); err != nil {
		t.Fatal(err)
	}
	for _, task := range l.Tasks {
		if task["task_id"] == id {
			return task
		}
	}
	return nil
}

// TestOperatorMethodsEndToEnd: the operator methods on a running gateway, read through the
// admin listener: status, backends with samples, recent errors, the catalog as a caller
// sees it, tasks across callers with cancel, reload, and the operator scope.
func TestOperatorMethodsEndToEnd(t *testing.T) {
	ts := startConsole(t)
	for range 3 {
		if r := ts.callKey("alice-key", "subtract", `{"minuend":42,"subtrahend":23}`); r.Error != nil {
			t.Fatalf("subtract: %+v", r.Error)
		}
	}
	bad := ts.callKey("alice-key", "subtract", `{"minuend":"x"}`)
	if bad.Error == nil {
		t.Fatal("a bad call succeeded")
	}

	var st struct {
		Version   string                        `json:"version"`
		Listeners []struct{ Name, Addr string } `json:"listeners"`
		Faces     []struct {
			Name    string
			Enabled bool
		} `json:"faces"`
	}
	if err := json.Unmarshal(ts.ops("admin.status", `{}`), &st); err != nil {
		t.Fatal(err)
	}
	if st.Version == "" || len(st.Listeners) < 2 || st.Listeners[0].Addr != strings.TrimPrefix(ts.base, "http://") {
		t.Errorf("status %+v", st)
	}
	if !slices.ContainsFunc(st.Faces, func(f struct {
		Name    string
		Enabled bool
	}) bool {
		return f.Name == "nekte" && f.Enabled
	}) {
		t.Errorf("faces %+v: nekte not on", st.Faces)
	}

	var be struct {
		Backends []struct{ Name, Kind string } `json:"backends"`
		Series   []struct {
			Backend string  `json:"backend"`
			Calls   int64   `json:"calls"`
			Errors  int64   `json:"errors"`
			Samples []any   `json:"samples"`
			P99     float64 `json:"p99_ms"`
		} `json:"series"`
	}
	if err := json.Unmarshal(ts.ops("admin.backends", `{}`), &be); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(be.Series, func(s struct {
		Backend string  `json:"backend"`
		Calls   int64   `json:"calls"`
		Errors  int64   `json:"errors"`
		Samples []any   `json:"samples"`
		P99     float64 `json:"p99_ms"`
	}) bool {
		return s.Backend == "demo"
	})
	if i < 0 || be.Series[i].Calls < 3 || len(be.Series[i].Samples) != 30 || be.Series[i].P99 <= 0 {
		t.Fatalf("backends %+v: want demo's 4 calls in 30 samples", be)
	}

	var errs struct {
		Errors []struct {
			Code    int    `json:"code"`
			Method  string `json:"method"`
			TraceID string `json:"trace_id"`
		} `json:"errors"`
		JaegerURL string `json:"jaeger_url"`
	}
	if err := json.Unmarshal(ts.ops("admin.errors.recent", fmt.Sprintf(`{"code":%d}`, bad.Error.Code)), &errs); err != nil {
		t.Fatal(err)
	}
	if len(errs.Errors) != 1 || errs.Errors[0].Method != "subtract" || len(errs.Errors[0].TraceID) != 32 || errs.JaegerURL == "" {
		t.Errorf("recent errors %+v", errs)
	}

	if cat := string(ts.ops("admin.catalog", `{"level":1}`)); !strings.Contains(cat, `"id":"hold"`) || !strings.Contains(cat, `"desc":`) {
		t.Errorf("catalog %s", cat)
	}

	stream := delegateHold(t.Context(), t, ts, "e2e-1")
	waitFor(t, func() bool { task := operatorTask(t, ts, "e2e-1"); return task != nil && task["status"] == "running" })
	if task := operatorTask(t, ts, "e2e-1"); task["owner"] != "alice" {
		t.Errorf("task %+v: want alice's", task)
	}
	ts.ops("admin.tasks.cancel", `{"task_id":"e2e-1","reason":"by the test"}`)
	if task := operatorTask(t, ts, "e2e-1"); task["status"] != "cancelled" {
		t.Errorf("task after cancel %+v", task)
	}
	select {
	case body := <-stream:
		if !strings.Contains(body, "cancelled") {
			t.Errorf("alice's stream did not end cancelled: %s", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("alice's stream did not end")
	}

	// a gateway not started from a file has nothing to reload
	r := ts.adminAs("X-API-Key", opsKey, "admin.config.reload", `{}`)
	if r.Error == nil || r.Error.Data["reason"] != "reload_refused" {
		t.Errorf("reload without a file: %+v", r.Error)
	}
	// admin.approvals alone does not open the operator methods
	if r := ts.adminAs("X-API-Key", "viewer-key", "admin.status", `{}`); r.Error == nil || r.Error.Code != 4002 {
		t.Errorf("viewer: %+v, want 4002", r.Error)
	}
}

// TestConsoleInChromium opens the console in Debian's Chromium (driven by playwright-core,
// internal/consoletest), signs in as the operator, and checks what the page shows of a
// delegated task and a call held for approval; it approves the call and cancels the task
// with the page's buttons, then checks both through the admin API and that the held call
// runs. Screenshots go to docs/img/console-*.png with UPDATE_SCREENSHOTS=1, else to a temp
// dir. Without the tools it skips, unless CONFORMANCE_REQUIRED=1.
func TestConsoleInChromium(t *testing.T) {
	tools := consoletest.Default()
	if err := tools.Check(); err != nil {
		if errors.Is(err, consoletest.ErrNotInstalled) && os.Getenv("CONFORMANCE_REQUIRED") != "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	ts := startConsole(t)
	for range 5 {
		ts.callKey("alice-key", "subtract", `{"minuend":42,"subtrahend":23}`)
	}
	ts.callKey("alice-key", "subtract", `{"minuend":"x"}`) // a recent error

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stream := delegateHold(ctx, t, ts, "console-1")
	waitFor(t, func() bool {
		task := operatorTask(t, ts, "console-1")
		return task != nil && task["status"] == "running"
	})
	approvalID := ts.deleteAsync("alice-key")

	shots := t.TempDir()
	if os.Getenv("UPDATE_SCREENSHOTS") == "1" {
		abs, err := filepath.Abs(filepath.Join("..", "docs", "img"))
		if err != nil {
			t.Fatal(err)
		}
		shots = abs
	}
	res, err := tools.Run(ctx, consoletest.Params{URL: ts.admin, Key: opsKey, Task: "console-1", Approval: approvalID, Shots: shots})
	if err != nil {
		t.Fatal(err)
	}
	shown := res.Shown
	t.Logf("the page showed: %v", shown)
	if csp, _ := shown["csp"].(string); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	for key, want := range map[string]string{"task": "console-1 alice hold running 1/2", "approval": approvalID + " alice order.delete",
		"audit": "approved ops approved in the console", "cancelled": "cancelled"} {
		if got, _ := shown[key].(string); !strings.Contains(got, want) {
			t.Errorf("the page showed %s %q, want it to contain %q", key, got, want)
		}
	}
	if ls := fmt.Sprint(shown["listeners"]); !strings.Contains(ls, "boundary "+strings.TrimPrefix(ts.base, "http://")+" plaintext") {
		t.Errorf("listeners shown: %s", ls)
	}
	if links := fmt.Sprint(shown["errorLinks"]); !strings.Contains(links, "http://127.0.0.1:16686/trace/") {
		t.Errorf("error trace links: %s", links)
	}
	st, _ := shown["storage"].(map[string]any)
	if fmt.Sprint(st["session"]) != "[gatehouse.console.credential]" || fmt.Sprint(st["local"]) != "[]" || st["cookie"] != "" {
		t.Errorf("storage: %v (the credential belongs in session storage only)", st)
	}
	if after := fmt.Sprint(shown["afterSignOut"]); after != "[]" {
		t.Errorf("session storage after sign-out: %s", after)
	}
	for _, name := range []string{"console-login.png", "console-overview.png", "console-after-actions.png"} {
		if fi, err := os.Stat(filepath.Join(shots, name)); err != nil || fi.Size() < 1000 {
			t.Errorf("screenshot %s: %v", name, err)
		}
	}

	// the effects, through the admin API and the boundary
	if rec := ts.opsDecided(approvalID); rec.Status != approval.Approved || rec.DecidedBy != "ops" {
		t.Errorf("approval %+v, want approved by ops", rec)
	}
	if task := operatorTask(t, ts, "console-1"); task["status"] != "cancelled" {
		t.Errorf("task %+v, want cancelled", task)
	}
	if r := ts.redeem("alice-key", approvalID); r.Error != nil {
		t.Errorf("the approved call: %+v", r.Error)
	}
	select {
	case body := <-stream:
		if !strings.Contains(body, "cancelled") {
			t.Errorf("alice's stream did not end cancelled: %s", body)
		}
	case <-ctx.Done():
		t.Fatal("alice's stream did not end")
	}
}

func TestListenOverridesConsole(t *testing.T) {
	tests := []struct {
		name       string
		yaml       string
		wantScopes string
	}{
		{"anonymous from loopback", "auth: {anonymous: {scopes: [read]}}\n", "read admin.operator admin.approvals"},
		{"own scopes", "auth: {anonymous: {}}\nserver: {admin: {operator_scope: ops.view}}\napprovals: {admin_scope: ops.decide}\n", "ops.view ops.decide"},
		{"anonymous from anywhere", "auth: {anonymous: {loopback_only: false}}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("test.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			ListenOverrides{Console: true}.Apply(cfg)
			ListenOverrides{Console: true}.Apply(cfg) // on every reload: granted once
			if !cfg.Server.Admin.Console.Enabled || strings.Join(cfg.Auth.Anonymous.Scopes, " ") != tt.wantScopes {
				t.Fatalf("console %v, anonymous scopes %v, want %q", cfg.Server.Admin.Console.Enabled, cfg.Auth.Anonymous.Scopes, tt.wantScopes)
			}
		})
	}
	if cfg, _ := Parse("test.yaml", []byte("{}")); cfg.Server.Admin.Console.Enabled || cfg.Server.Admin.OperatorScope != "admin.operator" {
		t.Fatalf("defaults: %+v", cfg.Server.Admin)
	}
}

// TestConsoleOverrideLoopback: with --console (make run), an anonymous caller from loopback
// reads the operator methods and the console is served.
func TestConsoleOverrideLoopback(t *testing.T) {
	cfg := mustParse(t, baseConfig)
	ListenOverrides{Console: true}.Apply(cfg)
	ts := startConfig(t, cfg, nil)
	if r := ts.adminAs("X-Nothing", "", "admin.status", `{}`); r.Error != nil {
		t.Fatalf("admin.status as anonymous from loopback: %+v", r.Error)
	}
	resp, err := http.Get(ts.admin + "/console")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("GET /console: %d %v", resp.StatusCode, resp.Header)
	}
}
