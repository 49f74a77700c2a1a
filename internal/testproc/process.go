package testproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// TailLimit is how many bytes of a log [Process.WaitReady]'s errors show, and a good limit
// for [Process.Tail] in other failure messages.
const TailLimit = 4000

// Process is one running program whose output goes to a log file. Its methods may be called
// from any goroutine.
type Process struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// Start starts bin with args in dir, with standard output and error appended to the log file
// logName in dir (created when missing, so that a program started again keeps one log), in a
// process group of its own on Unix and, on Linux, killed when the test binary dies. A
// goroutine reaps the process when it exits; end it with [Process.Stop] or [Process.Kill].
func Start(dir, bin, logName string, args ...string) (*Process, error) {
	logPath := filepath.Join(dir, logName)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating log: %w", err)
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(bin, args...) //nolint:gosec // a binary the harness located, with arguments it wrote
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &Process{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // the exit state stays in cmd.ProcessState
		close(p.done)
	}()
	return p, nil
}

// Done returns a channel closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitState returns how the process exited, or nil while it runs.
func (p *Process) ExitState() *os.ProcessState {
	select {
	case <-p.done:
		return p.cmd.ProcessState
	default:
		return nil
	}
}

// Pid returns the process id, which on Unix is also the id of its process group.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogPath returns the path of the process's log file.
func (p *Process) LogPath() string { return p.log }

// Signal sends sig to the process's group on Unix (to the process elsewhere, where only
// os.Kill is sure to work). It does nothing once the process has exited.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.exited() {
		return nil
	}
	return signalGroup(p.cmd.Process, sig)
}

// Stop ends the process gracefully: SIGTERM to the process alone, then, after timeout,
// [Process.Kill]. It returns once the process is reaped.
func (p *Process) Stop(timeout time.Duration) {
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		p.Kill()
	}
}

// Kill ends the process at once with SIGKILL to its group (its children too, on Unix) and
// returns once the process is reaped. It does nothing more once the process has exited.
func (p *Process) Kill() {
	_ = p.Signal(syscall.SIGKILL)
	<-p.done
}

// Tail returns the last limit bytes of the process's log, or the error that kept it from
// being read.
func (p *Process) Tail(limit int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	if len(b) > limit {
		b = b[len(b)-limit:]
	}
	return string(b)
}

// exited reports whether the process has exited and been reaped; its pid and group id may
// then belong to another process, which must not be signalled.
func (p *Process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
