package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// opsGateway is a fakeGateway with the operator methods; it records what they were asked.
type opsGateway struct {
	*fakeGateway
	window    *observability.Window
	tasks     *fakeTasks // nil: no NEKTE
	reloadErr error
	reloads   int
	catalogAs *gateway.Principal
	level     int
	console   ConsoleConfig
}

var _ Operations = (*opsGateway)(nil)

func (g *opsGateway) OperatorScope() string  { return "admin.operator" }
func (g *opsGateway) Console() ConsoleConfig { return g.console.WithDefaults() }
func (g *opsGateway) Status() Status {
	return Status{Version: "v1", Config: ConfigStatus{Version: "abc"},
		Listeners: []Listener{{Name: "boundary", Addr: "127.0.0.1:1", TLS: true}}, Faces: []FaceStatus{{Name: "mcp", Enabled: true}}}
}
func (g *opsGateway) Backends(context.Context) []Backend {
	return []Backend{{Name: "calc", Kind: "grpc", Up: true, Breaker: "open", Shedding: true}}
}
func (g *opsGateway) Window() *observability.Window { return g.window }
func (g *opsGateway) Catalog(level int, as *gateway.Principal) (json.RawMessage, error) {
	g.level, g.catalogAs = level, as
	return json.RawMessage(`{"caps":[]}`), nil
}
func (g *opsGateway) Tasks() OperatorTasks {
	if g.tasks == nil {
		return nil
	}
	return g.tasks
}
func (g *opsGateway) ReloadConfig() error { g.reloads++; return g.reloadErr }

type fakeTasks struct{ cancelled, resumed []string }

func (f *fakeTasks) OperatorTasks(_ context.Context, status nk.TaskStatus) ([]nekte.TaskView, error) {
	all := []nekte.TaskView{{TaskID: "t1", Owner: "alice", Status: nk.TaskRunning}, {TaskID: "t2", Owner: "bob", Status: nk.TaskSuspended}}
	var out []nekte.TaskView
	for _, t := range all {
		if status == "" || t.Status == status {
			out = append(out, t)
		}
	}
	return out, nil
}
func (f *fakeTasks) OperatorCancel(_ context.Context, id, reason string) (nk.TaskLifecycleResult, error) {
	if id != "t1" {
		return nk.TaskLifecycleResult{}, gateway.Errorf(schemas.CodeInvalidParams, "unknown task")
	}
	f.cancelled = append(f.cancelled, id+":"+reason)
	return nk.TaskLifecycleResult{TaskID: id, Status: nk.TaskCancelled, PreviousStatus: nk.TaskRunning}, nil
}
func (f *fakeTasks) OperatorResume(_ context.Context, id string) (nk.TaskLifecycleResult, error) {
	f.resumed = append(f.resumed, id)
	return nk.TaskLifecycleResult{TaskID: id, Status: nk.TaskRunning, PreviousStatus: nk.TaskSuspended}, nil
}

// rpcOps posts one admin request to a face over gw and returns the response body.
func rpcOps(t *testing.T, gw Gateway, body string) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/rpc", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	New(gw, slog.New(slog.DiscardHandler)).ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return string(b)
}

func TestOperatorMethods(t *testing.T) {
	operator := []string{"admin.operator"}
	tests := []struct {
		name    string
		scopes  []string
		noOps   bool // a gateway without Operations
		noTasks bool
		reload  error
		body    string
		want    []string     // substrings of the response
		code    schemas.Code // 0: a result
		check   func(t *testing.T, g *opsGateway)
	}{
		{name: "status", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.status"}`,
			want: []string{`"version":"v1"`, `"listeners":[{"name":"boundary","addr":"127.0.0.1:1","tls":true}]`, `"faces":[{"name":"mcp","enabled":true}]`}},
		{name: "scope missing", scopes: []string{"admin.approvals"}, body: `{"jsonrpc":"2.0","id":1,"method":"admin.status"}`,
			code: schemas.CodeInsufficientScope, want: []string{`"missing_scopes":["admin.operator"]`}},
		{name: "no operations", noOps: true, scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.status"}`, code: schemas.CodeMethodNotFound},
		{name: "unknown member", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.status","params":{"x":1}}`,
			code: schemas.CodeInvalidParams, want: []string{`"param":"x"`}},
		{name: "backends with samples", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.backends"}`,
			want: []string{`"bucket_ms":10000`, `"breaker":"open"`, `"shedding":true`, `"series":[{"backend":"calc"`, `"calls":1`}},
		{name: "catalog for everyone", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.catalog"}`, want: []string{`"caps":[]`},
			check: func(t *testing.T, g *opsGateway) {
				if g.level != 2 || g.catalogAs != nil {
					t.Errorf("level %d as %v, want 2 and everyone", g.level, g.catalogAs)
				}
			}},
		{name: "catalog as a caller", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.catalog","params":{"level":1,"subject":"alice","scopes":["calc"]}}`,
			want: []string{`"caps":[]`}, check: func(t *testing.T, g *opsGateway) {
				if g.level != 1 || g.catalogAs == nil || g.catalogAs.Subject != "alice" || len(g.catalogAs.Scopes) != 1 {
					t.Errorf("level %d as %+v", g.level, g.catalogAs)
				}
			}},
		{name: "catalog bad level", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.catalog","params":{"level":3}}`,
			code: schemas.CodeInvalidParams, want: []string{`"param":"level"`}},
		{name: "tasks list", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.tasks.list"}`, want: []string{`"task_id":"t1"`, `"task_id":"t2"`}},
		{name: "tasks list by status", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.tasks.list","params":{"status":"suspended"}}`,
			want: []string{`{"tasks":[{"task_id":"t2"`}},
		{name: "tasks without NEKTE", scopes: operator, noTasks: true, body: `{"jsonrpc":"2.0","id":1,"method":"admin.tasks.list"}`, code: schemas.CodeMethodNotFound},
		{name: "cancel", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.tasks.cancel","params":{"task_id":"t1","reason":"stuck"}}`,
			want: []string{`"status":"cancelled"`}, check: func(t *testing.T, g *opsGateway) {
				if len(g.tasks.cancelled) != 1 || g.tasks.cancelled[0] != "t1:stuck" {
					t.Errorf("cancelled %v", g.tasks.cancelled)
				}
			}},
		{name: "cancel without id", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.tasks.cancel","params":{}}`,
			code: schemas.CodeInvalidParams, want: []string{`"param":"task_id"`}},
		{name: "cancel's error passes through", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.tasks.cancel","params":{"task_id":"zz"}}`,
			code: schemas.CodeInvalidParams, want: []string{`unknown task`}},
		{name: "resume takes no reason", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.tasks.resume","params":{"task_id":"t2","reason":"x"}}`,
			code: schemas.CodeInvalidParams},
		{name: "resume", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.tasks.resume","params":{"task_id":"t2"}}`,
			want: []string{`"status":"running"`}, check: func(t *testing.T, g *opsGateway) {
				if len(g.tasks.resumed) != 1 {
					t.Errorf("resumed %v", g.tasks.resumed)
				}
			}},
		{name: "recent errors", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.errors.recent","params":{"code":-32603}}`,
			want: []string{`"errors":[{"at":`, `"trace_id":"0af7651916cd43dd8448eb211c80319c"`, `"jaeger_url":"http://jaeger:16686"`}},
		{name: "recent errors of another code", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.errors.recent","params":{"code":4001}}`,
			want: []string{`"errors":[]`}},
		{name: "recent errors negative limit", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.errors.recent","params":{"limit":-1}}`,
			code: schemas.CodeInvalidParams, want: []string{`"param":"limit"`}},
		{name: "reload", scopes: operator, body: `{"jsonrpc":"2.0","id":1,"method":"admin.config.reload"}`, want: []string{`"ok":true`, `"version":"abc"`},
			check: func(t *testing.T, g *opsGateway) {
				if g.reloads != 1 {
					t.Errorf("%d reloads", g.reloads)
				}
			}},
		{name: "reload refused", scopes: operator, reload: errors.New("bad yaml"), body: `{"jsonrpc":"2.0","id":1,"method":"admin.config.reload"}`,
			code: schemas.CodeInvalidParams, want: []string{`"reason":"reload_refused"`, `bad yaml`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := observability.NewWindow(10*time.Second, 3, 4, nil)
			w.Observe(time.Now(), "calc", time.Millisecond, observability.RecentError{Code: schemas.CodeInternal, TraceID: "0af7651916cd43dd8448eb211c80319c"}, true)
			base := &fakeGateway{rt: fakeRuntime{scopes: tt.scopes}}
			g := &opsGateway{fakeGateway: base, window: w, tasks: &fakeTasks{}, reloadErr: tt.reload, console: ConsoleConfig{JaegerURL: "http://jaeger:16686"}}
			if tt.noTasks {
				g.tasks = nil
			}
			var gw Gateway = g
			if tt.noOps {
				gw = base
			}
			got := rpcOps(t, gw, tt.body)
			if tt.code != 0 && !strings.Contains(got, `"code":`+strconv.Itoa(int(tt.code))) {
				t.Fatalf("got %s, want code %d", got, tt.code)
			}
			if tt.code == 0 && !strings.Contains(got, `"result":`) {
				t.Fatalf("got %s, want a result", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("got %s, want it to contain %s", got, w)
				}
			}
			if tt.check != nil {
				tt.check(t, g)
			}
		})
	}
}

func TestConsoleConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		c    ConsoleConfig
		want string // "" for valid
	}{
		{"defaults", ConsoleConfig{}, ""},
		{"jaeger", ConsoleConfig{JaegerURL: "https://jaeger.example.com"}, ""},
		{"jaeger not http", ConsoleConfig{JaegerURL: "javascript:alert(1)"}, "jaeger_url"},
		{"interval too short", ConsoleConfig{EventsInterval: time.Millisecond}, "events_interval"},
		{"bucket too short", ConsoleConfig{WindowBucket: time.Millisecond}, "window_bucket"},
		{"too many buckets", ConsoleConfig{WindowBuckets: 5000}, "window_buckets"},
		{"negative streams", ConsoleConfig{MaxEventStreams: -1}, "max_event_streams"},
		{"negative errors", ConsoleConfig{RecentErrors: -1}, "recent_errors"},
		{"too many tasks", ConsoleConfig{RecentTasks: 1 << 20}, "recent_tasks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if (tt.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), tt.want)) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}
