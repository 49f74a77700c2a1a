package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServePprofFlag serves the shipped configuration's auth section (anonymous callers from
// loopback only, no scopes; its fixed ports left out) as make run does: without --pprof the
// admin listener has no /debug/pprof/; with it, an anonymous loopback caller gets the
// profiles without a credential.
func TestServePprofFlag(t *testing.T) {
	shipped := filepath.Join(t.TempDir(), "gatehouse.yaml")
	_ = os.WriteFile(shipped, []byte("auth: {anonymous: {loopback_only: true, tier: standard}}\nrouting: {demo: {}}\n"), 0o600)
	get := func(t *testing.T, url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	t.Run("off", func(t *testing.T) {
		p := startProcess(t, shipped)
		if status, body := get(t, p.admin+"/debug/pprof/"); status != http.StatusNotFound {
			t.Fatalf("got %d %s, want 404", status, body)
		}
	})
	t.Run("on", func(t *testing.T) {
		p := startProcessEnv(t, shipped, nil, "--pprof")
		if status, body := get(t, p.admin+"/debug/pprof/"); status != http.StatusOK || !strings.Contains(body, "goroutine") {
			t.Fatalf("index: got %d %.200s", status, body)
		}
		status, body := get(t, p.admin+"/debug/pprof/cmdline")
		if status != http.StatusOK || !strings.Contains(body, "--pprof") {
			t.Fatalf("cmdline: got %d %q", status, body)
		}
		if status, body := get(t, p.admin+"/debug/pprof/profile?seconds=1"); status != http.StatusOK || len(body) == 0 {
			t.Fatalf("profile: got %d (%d bytes)", status, len(body))
		}
	})
	t.Run("on, the scope withheld", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
		// anonymous admitted from anywhere: --pprof grants the scope only to loopback-only anonymous access
		_ = os.WriteFile(cfg, []byte("auth: {anonymous: {loopback_only: false}}\nrouting: {demo: {}}\n"), 0o600)
		p := startProcessEnv(t, cfg, nil, "--pprof")
		status, body := get(t, p.admin+"/debug/pprof/")
		if status != http.StatusForbidden || !strings.Contains(body, `"code":4002`) || !strings.Contains(body, "admin.pprof") {
			t.Fatalf("got %d %s, want 403 with 4002", status, body)
		}
	})
}
