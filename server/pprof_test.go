package server

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAdminPprof: /debug/pprof/ on the admin listener is off by default (404); on, the
// caller is authenticated like admin JSON-RPC (zone operator) and must hold
// server.admin.pprof_scope — anonymous loopback callers only when auth.anonymous grants it.
func TestAdminPprof(t *testing.T) {
	const (
		profKey  = "prof-key-0123456789abcdef0123456789"
		otherKey = "other-key-0123456789abcdef012345678"
	)
	yaml := func(admin, anonScopes string) string {
		return fmt.Sprintf(`
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"%s}
  shutdown_grace: 5s
auth:
  anonymous: {scopes: [%s]}
  api_keys:
    - {name: prof, hash: "%s", scopes: [ops.profile]}
    - {name: other, hash: "%s", scopes: [admin.approvals]}
routing:
  demo: {}
`, admin, anonScopes, apiKeyHash(profKey), apiKeyHash(otherKey))
	}
	get := func(t *testing.T, ts *testServer, path, key string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.admin+path, nil)
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}

	t.Run("off by default", func(t *testing.T) {
		ts := start(t, yaml("", "admin.pprof"), nil)
		for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline"} {
			if status, _, body := get(t, ts, p, profKey); status != http.StatusNotFound {
				t.Fatalf("%s: got %d %s, want 404", p, status, body)
			}
		}
	})

	t.Run("on, configured scope", func(t *testing.T) {
		ts := start(t, yaml(", pprof: true, pprof_scope: ops.profile", ""), nil)
		for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline"} {
			if status, _, body := get(t, ts, p, profKey); status != http.StatusOK {
				t.Fatalf("%s with the scope: got %d %s", p, status, body)
			}
			status, h, body := get(t, ts, p, otherKey)
			if status != http.StatusForbidden || !strings.Contains(body, `"code":4002`) || !strings.Contains(body, `"missing_scopes":["ops.profile"]`) ||
				h.Get("Content-Type") != "application/json" {
				t.Fatalf("%s without the scope: got %d %s", p, status, body)
			}
			// anonymous (loopback) holds no scope here
			if status, _, body := get(t, ts, p, ""); status != http.StatusForbidden || !strings.Contains(body, `"code":4002`) {
				t.Fatalf("%s anonymous: got %d %s", p, status, body)
			}
			status, h, body = get(t, ts, p, "wrong-key-0123456789abcdef0123456789")
			if status != http.StatusUnauthorized || !strings.Contains(body, `"error"`) || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("%s with a wrong key: got %d %s", p, status, body)
			}
		}
	})

	t.Run("on, anonymous granted the default scope", func(t *testing.T) {
		ts := start(t, yaml(", pprof: true", "admin.pprof"), nil)
		status, _, body := get(t, ts, "/debug/pprof/", "")
		if status != http.StatusOK || !strings.Contains(body, "goroutine") {
			t.Fatalf("got %d %.200s", status, body)
		}
		if status, _, body := get(t, ts, "/debug/pprof/", profKey); status != http.StatusForbidden {
			t.Fatalf("a key without admin.pprof: got %d %s", status, body)
		}
	})
}

func TestListenOverridesPprof(t *testing.T) {
	cfg, err := Parse("test.yaml", []byte("auth: {anonymous: {scopes: [read]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ListenOverrides{Pprof: true}.Apply(cfg)
	ListenOverrides{Pprof: true}.Apply(cfg) // on every reload: granted once
	if !cfg.Server.Admin.Pprof || strings.Join(cfg.Auth.Anonymous.Scopes, " ") != "read admin.pprof" {
		t.Fatalf("pprof %v, anonymous scopes %v", cfg.Server.Admin.Pprof, cfg.Auth.Anonymous.Scopes)
	}
	cfg, err = Parse("test.yaml", []byte("auth: {anonymous: {loopback_only: false}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ListenOverrides{Pprof: true}.Apply(cfg)
	if !cfg.Server.Admin.Pprof || len(cfg.Auth.Anonymous.Scopes) != 0 {
		t.Fatalf("anonymous from anywhere granted %v", cfg.Auth.Anonymous.Scopes)
	}
	cfg, _ = Parse("test.yaml", []byte("{}"))
	if cfg.Server.Admin.Pprof || cfg.Server.Admin.PprofScope != DefaultPprofScope {
		t.Fatalf("defaults: %+v", cfg.Server.Admin)
	}
}
