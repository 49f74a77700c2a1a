package main

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEarlySIGHUPDoesNotKill: SIGHUPs sent from the moment the process starts — while its
// packages initialise and the server is being built — do not end it (exit 129 before the
// handler was installed); it comes up and serves.
func TestEarlySIGHUPDoesNotKill(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	if err := os.WriteFile(cfg, []byte("auth: {anonymous: {}}\nrouting: {demo: {}}\nserver: {watch_config: false}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
	}{
		{"with a configuration file", []string{"--config", cfg}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(binary, append([]string{"serve", "--boundary-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--internal-addr", "127.0.0.1:0"}, tt.args...)...)
			stderr := &lockedBuffer{}
			cmd.Stderr = stderr
			cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() {
				_ = cmd.Process.Kill()
				<-exited
			}()
			p := &process{cmd: cmd, stderr: stderr}
			// A SIGHUP every millisecond for 200 ms, from the moment the hangup package has
			// initialised (GODEBUG=inittrace=1 has the runtime log each package's init):
			// while the 300-odd other packages initialise (main runs some 100 ms in, in a
			// race-built binary) and the server is built. Before that — the runtime starting
			// and the first few packages, about 2 ms — no program can guard.
			waitForOutput(t, stderr, "init github.com/gatehouse-dev/gatehouse/cmd/gatehouse/internal/hangup ")
			for start := time.Now(); time.Since(start) < 200*time.Millisecond; time.Sleep(time.Millisecond) {
				if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
					break
				}
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				select {
				case err := <-exited:
					exited <- err
					if ee, ok := errors.AsType[*exec.ExitError](err); ok {
						t.Fatalf("gatehouse ended by an early SIGHUP: %v\n%s", ee, stderr.String())
					}
					t.Fatalf("gatehouse exited: %v\n%s", err, stderr.String())
				default:
				}
				if l, ok := p.serving(); ok {
					if resp, err := http.Get("http://" + l.Admin + "/readyz"); err == nil {
						_ = resp.Body.Close()
						if resp.StatusCode == http.StatusOK {
							return
						}
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("not ready:\n%s", stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// waitForOutput waits until out holds want.
func waitForOutput(t *testing.T, out *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in:\n%s", want, out.String())
		}
		time.Sleep(100 * time.Microsecond)
	}
}
