package admin

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/observability"
)

func TestConsolePages(t *testing.T) {
	tests := []struct {
		name     string
		enabled  bool
		noOps    bool
		path     string
		status   int
		ctype    string
		contains string
	}{
		{"page", true, false, "/console", http.StatusOK, "text/html; charset=utf-8", `<script src="/console/assets/app.js" defer></script>`},
		{"script", true, false, "/console/assets/app.js", http.StatusOK, "text/javascript; charset=utf-8", "sessionStorage"},
		{"style", true, false, "/console/assets/app.css", http.StatusOK, "text/css; charset=utf-8", "--fg"},
		{"unknown asset", true, false, "/console/assets/index.html", http.StatusNotFound, "", ""},
		{"off", false, false, "/console", http.StatusNotFound, "", ""},
		{"off: events", false, false, "/console/events", http.StatusNotFound, "", ""},
		{"no operations", true, true, "/console", http.StatusNotFound, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := &fakeGateway{rt: fakeRuntime{scopes: []string{"admin.operator"}}}
			var gw Gateway = &opsGateway{fakeGateway: base, console: ConsoleConfig{Enabled: tt.enabled}}
			if tt.noOps {
				gw = base
			}
			rec := httptest.NewRecorder()
			New(gw, slog.New(slog.DiscardHandler)).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
			if rec.Code != tt.status {
				t.Fatalf("HTTP %d, want %d", rec.Code, tt.status)
			}
			if tt.status != http.StatusOK {
				return
			}
			h := rec.Header()
			if got := h.Get("Content-Type"); got != tt.ctype {
				t.Errorf("Content-Type %q, want %q", got, tt.ctype)
			}
			if got := h.Get("Content-Security-Policy"); got != consoleCSP || !strings.Contains(got, "script-src 'self';") || strings.Contains(got, "unsafe") {
				t.Errorf("CSP %q", got)
			}
			if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
				t.Errorf("headers %v", h)
			}
			if !strings.Contains(rec.Body.String(), tt.contains) {
				t.Errorf("body does not contain %q", tt.contains)
			}
		})
	}
}

// TestConsoleHasNoInlineCode: the page has no inline script, no event-handler attribute and
// no style attribute or element, which the CSP would block; and nothing from elsewhere.
func TestConsoleHasNoInlineCode(t *testing.T) {
	b, err := consoleAssets.ReadFile("console/index.html")
	if err != nil {
		t.Fatal(err)
	}
	page := strings.ToLower(string(b))
	for _, bad := range []string{"<script>", " onclick=", " onload=", " onsubmit=", " style=", "<style", "http://", "https://", "javascript:"} {
		if strings.Contains(page, bad) {
			t.Errorf("index.html contains %q", bad)
		}
	}
	js, _ := consoleAssets.ReadFile("console/app.js")
	for _, bad := range []string{"innerHTML", "eval(", "new Function", "localStorage", "document.write"} {
		if strings.Contains(string(js), bad) {
			t.Errorf("app.js contains %q", bad)
		}
	}
}

func TestConsoleEvents(t *testing.T) {
	tests := []struct {
		name   string
		scopes []string
		key    string
		limit  int
		status int
	}{
		{"operator", []string{"admin.operator"}, "k", 0, http.StatusOK},
		{"without the scope", []string{"admin.approvals"}, "k", 0, http.StatusForbidden},
		{"over the stream limit", []string{"admin.operator"}, "k", -1, http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := observability.NewWindow(10*time.Second, 3, 4, nil)
			w.Observe(time.Now(), "calc", time.Millisecond, observability.RecentError{}, false)
			g := &opsGateway{fakeGateway: &fakeGateway{serving: true, rt: fakeRuntime{scopes: tt.scopes}}, window: w, tasks: &fakeTasks{},
				console: ConsoleConfig{Enabled: true, EventsInterval: 100 * time.Millisecond}}
			f := New(g, slog.New(slog.DiscardHandler))
			srv := httptest.NewServer(f)
			defer srv.Close()
			if tt.limit < 0 {
				// every stream slot taken
				for range DefaultMaxEventStreams {
					f.console.streams.Add(1)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/console/events", nil)
			req.Header.Set("X-API-Key", tt.key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			if resp.StatusCode != tt.status {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("HTTP %d %s, want %d", resp.StatusCode, b, tt.status)
			}
			if tt.status != http.StatusOK {
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("Content-Type %q", ct)
			}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 1<<20)
			var events []string
			for len(events) < 2 && sc.Scan() {
				line := sc.Text()
				if strings.HasPrefix(line, "data: ") {
					events = append(events, line)
				}
			}
			if len(events) < 2 {
				t.Fatalf("%d snapshots, want 2 (%v)", len(events), sc.Err())
			}
			for _, want := range []string{`"backends":[{"name":"calc"`, `"series":[{"backend":"calc"`, `"tasks":{"tasks":[{"task_id":"t1"`, `"version":"v1"`} {
				if !strings.Contains(events[0], want) {
					t.Errorf("snapshot %s lacks %s", events[0], want)
				}
			}
		})
	}
}
