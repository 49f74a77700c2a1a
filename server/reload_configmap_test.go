package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// configMapDir lays out dir as the kubelet's atomic writer does for a ConfigMap volume:
//
//	dir/..2026_11_22_13_00_00.000000001/gatehouse.yaml   the data, one directory per version
//	dir/..data -> ..2026_11_22_13_00_00.000000001        the current version
//	dir/gatehouse.yaml -> ..data/gatehouse.yaml          what the pod reads
//
// and returns the path of gatehouse.yaml.
func configMapDir(t *testing.T, dir, content string) string {
	t.Helper()
	version := configMapVersion(t, dir, 1, content)
	if err := os.Symlink(version, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gatehouse.yaml")
	if err := os.Symlink(filepath.Join("..data", "gatehouse.yaml"), path); err != nil {
		t.Fatal(err)
	}
	return path
}

// configMapVersion writes version n of the data directory and returns its name.
func configMapVersion(t *testing.T, dir string, n int, content string) string {
	t.Helper()
	name := fmt.Sprintf("..2026_11_22_13_00_00.%09d", n)
	if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, name), "gatehouse.yaml", content)
	return name
}

// configMapUpdate publishes version n as the kubelet does: the new data directory, a
// ..data_tmp link to it renamed over ..data (the atomic step), then the old directory
// removed. The file's own path, a link through ..data, never changes.
func configMapUpdate(t *testing.T, dir string, n int, content string) {
	t.Helper()
	old, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	version := configMapVersion(t, dir, n, content)
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(version, tmp); err != nil {
		t.Fatal(err)
	}
	if err := renameFile(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
		t.Fatal(err)
	}
}

// TestWatchSeesConfigMapUpdates checks that the watcher applies Kubernetes ConfigMap updates,
// where the watched path is a symlink whose target changes through a swap of ..data, and
// keeps doing so after the directory it first resolved to is gone.
func TestWatchSeesConfigMapUpdates(t *testing.T) {
	dir := t.TempDir()
	path := configMapDir(t, dir, baseConfig+"batch: {max_size: 3}\n")
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := startConfig(t, cfg, nil)
	ts.MarkLoaded(path)
	if _, _, out := ts.post(batchOf(4, "get_data")); strings.HasPrefix(out, "[") {
		t.Fatalf("a batch of 4 was served under max_size 3: %s", out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- ts.Watch(ctx, path) }()
	defer func() {
		cancel()
		if err := <-watched; err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(50 * time.Millisecond) // let the watcher start

	for version, size := range []int{4, 6} {
		configMapUpdate(t, dir, version+2, baseConfig+fmt.Sprintf("batch: {max_size: %d}\n", size))
		waitBatchServed(t, ts, size)
	}
}

// waitBatchServed waits until a batch of size members is served (the configuration allowing
// it is in force), failing the test after 10s.
func waitBatchServed(t *testing.T, ts *testServer, size int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, out := ts.post(batchOf(size, "get_data"))
		if strings.HasPrefix(out, "[") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ConfigMap update to max_size %d not picked up within 10s: %s", size, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
