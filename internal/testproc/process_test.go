//go:build linux

package testproc_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/testproc"
)

// waitTimeout bounds every wait of these tests, generously for a loaded machine.
const waitTimeout = 10 * time.Second

// startSh starts `sh -c script` in dir with its output in sh.log, killed at the test's end.
func startSh(t *testing.T, dir, script string) *testproc.Process {
	t.Helper()
	p, err := testproc.Start(dir, "sh", "sh.log", "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// waitFor calls p.WaitReady with check, failing the test on an error.
func waitFor(t *testing.T, p *testproc.Process, check func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if err := p.WaitReady(ctx, 10*time.Millisecond, check); err != nil {
		t.Fatal(err)
	}
}

// fileExists returns a check that passes once path exists.
func fileExists(path string) func(context.Context) error {
	return func(context.Context) error {
		_, err := os.Stat(path)
		return err
	}
}

// childPid waits for the pid the script wrote to child.pid in dir.
func childPid(t *testing.T, p *testproc.Process, dir string) int {
	t.Helper()
	path := filepath.Join(dir, "child.pid")
	waitFor(t, p, fileExists(path))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// childScript starts a `sleep 60` child and writes its pid to child.pid, after setup.
func childScript(setup string) string {
	return setup + `; sleep 60 & echo $! > child.pid.tmp && mv child.pid.tmp child.pid; wait`
}

// alive reports whether pid runs (a zombie does not), from /proc; without /proc the test
// fails, since it could not check what it claims.
func alive(t *testing.T, pid int) bool {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Fatalf("no /proc to read the state of a process from: %v", err)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// waitGone waits until pid no longer runs.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for alive(t, pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs after %v", pid, waitTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func exitString(p *testproc.Process) string {
	if s := p.ExitState(); s != nil {
		return s.String()
	}
	return "running"
}

func TestStartLogAndStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startSh(t, dir, `echo out; echo err >&2; : > ready; exec sleep 60`)
	if p.ExitState() != nil {
		t.Fatal("ExitState of a running process is not nil")
	}
	waitFor(t, p, fileExists(filepath.Join(dir, "ready"))) // the file is relative: the process runs in dir
	if got, want := p.Tail(testproc.TailLimit), "out\nerr\n"; got != want {
		t.Errorf("Tail = %q, want %q", got, want)
	}
	if got, want := p.Tail(4), "err\n"; got != want {
		t.Errorf("Tail(4) = %q, want %q", got, want)
	}
	if p.LogPath() != filepath.Join(dir, "sh.log") {
		t.Errorf("LogPath = %q, want sh.log in the test's directory", p.LogPath())
	}
	p.Stop(waitTimeout)
	select {
	case <-p.Done():
	default:
		t.Fatal("Done is open after Stop returned")
	}
	if got := exitString(p); got != "signal: terminated" {
		t.Errorf("exit state after Stop = %q, want signal: terminated", got)
	}
}

func TestStartAppendsToTheLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, word := range []string{"first", "second"} {
		p := startSh(t, dir, "echo "+word)
		<-p.Done()
	}
	b, err := os.ReadFile(filepath.Join(dir, "sh.log"))
	if err != nil || string(b) != "first\nsecond\n" {
		t.Errorf("log = %q, %v; want both runs' output", b, err)
	}
}

func TestStartMissingBinary(t *testing.T) {
	t.Parallel()
	if _, err := testproc.Start(t.TempDir(), "testproc-no-such-binary", "x.log"); err == nil {
		t.Fatal("Start of a missing binary returned no error")
	}
	if _, err := testproc.Start(filepath.Join(t.TempDir(), "missing"), "sh", "x.log"); err == nil {
		t.Fatal("Start in a missing directory returned no error")
	}
}

func TestWaitReadyExited(t *testing.T) {
	t.Parallel()
	p := startSh(t, t.TempDir(), `echo boom; exit 3`)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	err := p.WaitReady(ctx, 10*time.Millisecond, func(context.Context) error { return errors.New("not yet") })
	if !errors.Is(err, testproc.ErrExited) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("WaitReady = %v, want ErrExited with the log", err)
	}
	if code := p.ExitState().ExitCode(); code != 3 {
		t.Errorf("exit code = %d, want 3", code)
	}
}

// A check that passes does not make an exited process ready: it may have reached another
// program on the port the process failed to take.
func TestWaitReadyCheckPassesAfterExit(t *testing.T) {
	t.Parallel()
	p := startSh(t, t.TempDir(), `exit 0`)
	<-p.Done()
	err := p.WaitReady(t.Context(), 10*time.Millisecond, func(context.Context) error { return nil })
	if !errors.Is(err, testproc.ErrExited) {
		t.Fatalf("WaitReady = %v, want ErrExited", err)
	}
}

func TestWaitReadyTimeout(t *testing.T) {
	t.Parallel()
	p := startSh(t, t.TempDir(), `echo waiting; exec sleep 60`)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err := p.WaitReady(ctx, 10*time.Millisecond, func(context.Context) error { return errors.New("not yet") })
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, testproc.ErrExited) ||
		!strings.Contains(err.Error(), "not yet") || !strings.Contains(err.Error(), "waiting") {
		t.Fatalf("WaitReady = %v, want the deadline with the last check and the log", err)
	}
	if p.ExitState() != nil {
		t.Error("the process exited")
	}
}

// Stop signals the process alone: its child, in the same group, keeps running.
func TestStopSignalsTheProcessOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startSh(t, dir, childScript(`trap "exit 0" TERM`))
	child := childPid(t, p, dir)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	start := time.Now()
	p.Stop(waitTimeout)
	if got := exitString(p); got != "exit status 0" {
		t.Errorf("exit state after Stop = %q, want exit status 0 (the TERM trap)", got)
	}
	if elapsed := time.Since(start); elapsed >= waitTimeout {
		t.Errorf("Stop took %v: the SIGTERM did not end the process", elapsed)
	}
	if !alive(t, child) {
		t.Error("the child died: Stop signalled the whole group")
	}
}

// Stop kills the group when the process ignores SIGTERM for the whole timeout.
func TestStopKillsAfterTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startSh(t, dir, childScript(`trap "" TERM`))
	child := childPid(t, p, dir)
	const timeout = 300 * time.Millisecond
	start := time.Now()
	p.Stop(timeout)
	if elapsed := time.Since(start); elapsed < timeout {
		t.Errorf("Stop returned after %v, before its timeout %v", elapsed, timeout)
	}
	if got := exitString(p); got != "signal: killed" {
		t.Errorf("exit state after Stop = %q, want signal: killed", got)
	}
	waitGone(t, child)
}

func TestKillGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startSh(t, dir, childScript(`:`))
	child := childPid(t, p, dir)
	p.Kill()
	if got := exitString(p); got != "signal: killed" {
		t.Errorf("exit state after Kill = %q, want signal: killed", got)
	}
	waitGone(t, child)
	p.Kill() // a no-op once reaped
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("Signal after exit = %v, want nil", err)
	}
}

func TestSignalGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startSh(t, dir, childScript(`:`))
	child := childPid(t, p, dir)
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if got := exitString(p); got != "signal: terminated" {
		t.Errorf("exit state after Signal(SIGTERM) = %q, want signal: terminated", got)
	}
	waitGone(t, child)
	if p.Pid() <= 0 {
		t.Errorf("Pid = %d", p.Pid())
	}
}
