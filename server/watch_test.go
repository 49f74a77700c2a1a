package server

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchFileReactsToTheFileOnly: the watcher calls back for the configuration file and a
// ConfigMap-style swap of its "..data" link, and never for a neighbour in the folder — not
// even one written faster than the debounce, which must not delay a real change either.
func TestWatchFileReactsToTheFileOnly(t *testing.T) {
	tests := []struct {
		name string
		// configMap lays the folder out as a ConfigMap volume does: gatehouse.yaml →
		// ..data/gatehouse.yaml, ..data → a timestamped folder.
		configMap bool
		act       func(t *testing.T, dir, file string)
		want      bool
	}{
		{"neighbour written", false, func(t *testing.T, dir, _ string) {
			for i := range 20 {
				write(t, filepath.Join(dir, "neighbour.log"), string(rune('a'+i)))
				time.Sleep(10 * time.Millisecond)
			}
		}, false},
		{"neighbour created and removed", false, func(t *testing.T, dir, _ string) {
			write(t, filepath.Join(dir, "other.yaml"), "x")
			if err := os.Remove(filepath.Join(dir, "other.yaml")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"file written", false, func(t *testing.T, _, file string) { write(t, file, "log: {level: debug}\n") }, true},
		{"file replaced by rename", false, func(t *testing.T, dir, file string) {
			tmp := filepath.Join(dir, ".gatehouse.yaml.swp")
			write(t, tmp, "log: {level: warn}\n")
			if err := os.Rename(tmp, file); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"file written while a neighbour is written faster than the debounce", false, func(t *testing.T, dir, file string) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				for range 60 { // 1.2 s of writes, 20 ms apart
					_ = os.WriteFile(filepath.Join(dir, "busy.log"), []byte("x"), 0o600)
					time.Sleep(20 * time.Millisecond)
				}
			}()
			time.Sleep(100 * time.Millisecond)
			write(t, file, "log: {level: error}\n")
			<-done
		}, true},
		{"ConfigMap ..data swapped", true, func(t *testing.T, dir, _ string) {
			next := filepath.Join(dir, "..2026_02")
			if err := os.Mkdir(next, 0o700); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(next, "gatehouse.yaml"), "log: {level: debug}\n")
			tmp := filepath.Join(dir, "..data_tmp")
			if err := os.Symlink("..2026_02", tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, configMapData)); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"ConfigMap neighbour written", true, func(t *testing.T, dir, _ string) {
			write(t, filepath.Join(dir, "neighbour.log"), "x")
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "gatehouse.yaml")
			if tt.configMap {
				first := filepath.Join(dir, "..2026_01")
				if err := os.Mkdir(first, 0o700); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(first, "gatehouse.yaml"), "log: {level: info}\n")
				if err := os.Symlink("..2026_01", filepath.Join(dir, configMapData)); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(configMapData, "gatehouse.yaml"), file); err != nil {
					t.Fatal(err)
				}
			} else {
				write(t, file, "log: {level: info}\n")
			}
			var calls atomic.Int32
			first := make(chan time.Time, 1)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- watchFile(ctx, file, slog.New(slog.DiscardHandler), func() {
					if calls.Add(1) == 1 {
						first <- time.Now()
					}
				})
			}()
			time.Sleep(100 * time.Millisecond) // the watch is in place
			start := time.Now()
			tt.act(t, dir, file)
			acted := time.Now()
			time.Sleep(400 * time.Millisecond) // well past the debounce
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := calls.Load() > 0; got != tt.want {
				t.Fatalf("changed called %d times, want a call: %v", calls.Load(), tt.want)
			}
			if tt.want {
				// A neighbour's writes must not hold the reload back until they stop.
				if at := <-first; at.After(acted) && at.Sub(start) > time.Second {
					t.Fatalf("the change was seen %v after it, only once the neighbour stopped", at.Sub(start))
				}
			}
		})
	}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestConcernsFile is the watcher's filter on its own.
func TestConcernsFile(t *testing.T) {
	const path = "/etc/gatehouse/gatehouse.yaml"
	tests := []struct {
		name string
		want bool
	}{
		{"/etc/gatehouse/gatehouse.yaml", true},
		{"/etc/gatehouse/./gatehouse.yaml", true},
		{"/etc/gatehouse/..data", true},
		{"/etc/gatehouse/..data_tmp", false},
		{"/etc/gatehouse/gatehouse.yaml.swp", false},
		{"/etc/gatehouse/other.yaml", false},
		{"/etc/other/..data", false},
	}
	for _, tt := range tests {
		if got := concernsFile(path, tt.name); got != tt.want {
			t.Errorf("concernsFile(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
