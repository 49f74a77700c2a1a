package main

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// gogcPercent reads go_gc_gogc_percent (the runtime's GOGC) from the admin listener's /metrics.
func gogcPercent(t *testing.T, admin string) int {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_gc_gogc_percent "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
	}
	t.Fatal("no go_gc_gogc_percent in /metrics")
	return 0
}

// TestServeGCHeapFloor: gatehouse serve raises GOGC while its heap is below
// server.gc_heap_floor_mib (default 64), leaves Go's default with 0, and leaves a GOGC the
// environment sets.
func TestServeGCHeapFloor(t *testing.T) {
	write := func(extra string) string {
		cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
		_ = os.WriteFile(cfg, []byte("routing: {demo: {}}\n"+extra), 0o600)
		return cfg
	}
	t.Run("default", func(t *testing.T) {
		p := startProcessEnv(t, write(""), []string{"GOGC="})
		if g := gogcPercent(t, p.admin); g <= 100 {
			t.Fatalf("GOGC %d with the default floor and a heap of a few MB, want above 100", g)
		}
	})
	t.Run("off", func(t *testing.T) {
		p := startProcessEnv(t, write("server: {gc_heap_floor_mib: 0}\n"), []string{"GOGC="})
		if g := gogcPercent(t, p.admin); g != 100 {
			t.Fatalf("GOGC %d with the floor off, want 100", g)
		}
	})
	t.Run("GOGC set", func(t *testing.T) {
		p := startProcessEnv(t, write(""), []string{"GOGC=150"})
		if g := gogcPercent(t, p.admin); g != 150 {
			t.Fatalf("GOGC %d with GOGC=150 in the environment, want 150", g)
		}
	})
}
