package mcpbackend

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/routing/procgroup"
)

// child is a stdio upstream's process. The gateway owns its pipes (so no exec goroutine
// copies them and Wait never blocks on a grandchild holding one), its process group (so
// it can kill everything the server spawned) and the goroutine that reaps it.
type child struct {
	cmd    *exec.Cmd
	stdin  *os.File // the write end of the child's stdin
	stdout *os.File // the read end of the child's stdout
	grace  time.Duration

	exited  chan struct{} // closed once the process has been reaped
	exitErr error         // valid once exited is closed

	stderrDone chan struct{} // closed when stderr reaches EOF
	stopOnce   sync.Once
}

// safeEnv are the variables a child inherits unless inherit_env is set.
var safeEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR", "TZ"}

// childEnv returns the child's environment.
func childEnv(cfg *StdioConfig) []string {
	var env []string
	if cfg.InheritEnv {
		env = os.Environ()
	} else {
		for _, k := range safeEnv {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
	}
	keys := make([]string, 0, len(cfg.Env))
	for k := range cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+cfg.Env[k])
	}
	return env
}

// startChild starts the process; its stderr is logged line by line on log.
func startChild(cfg *StdioConfig, log *slog.Logger) (*child, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...) //nolint:gosec // the command comes from the operator's configuration
	cmd.Dir = cfg.Dir
	cmd.Env = childEnv(cfg)
	procgroup.Set(cmd)
	pipes := make([]*os.File, 0, 6) // inR, inW, outR, outW, errR, errW
	for range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			closeFiles(pipes...)
			return nil, fmt.Errorf("creating pipes: %w", err)
		}
		pipes = append(pipes, r, w)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes[0], pipes[3], pipes[5]
	err := cmd.Start()
	closeFiles(pipes[0], pipes[3], pipes[5]) // the child's ends
	if err != nil {
		closeFiles(pipes[1], pipes[2], pipes[4])
		return nil, fmt.Errorf("starting %s: %w", cfg.Command, err)
	}
	c := &child{cmd: cmd, stdin: pipes[1], stdout: pipes[2], grace: cfg.StopGrace,
		exited: make(chan struct{}), stderrDone: make(chan struct{})}
	go captureStderr(pipes[4], log.With("pid", cmd.Process.Pid), cfg.StderrLineBytes, c.stderrDone)
	go func() {
		c.exitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}

// pid returns the child's process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// exitReason describes how the process ended; call it once exited is closed.
func (c *child) exitReason() string {
	if c.exitErr == nil {
		return "process exited with status 0"
	}
	if ee, ok := errors.AsType[*exec.ExitError](c.exitErr); ok {
		return "process " + ee.String() // "exit status 1", "signal: killed"
	}
	return "process ended: " + c.exitErr.Error()
}

// kill ends the child's whole process group at once.
func (c *child) kill() { _ = procgroup.Kill(c.cmd) }

// stop ends the child: stdin is closed so a well-behaved server exits by itself within
// the grace period, then the group is sent SIGTERM, then SIGKILL. It returns once the
// process is reaped and its stderr drained (or a bound on that has passed).
func (c *child) stop() {
	c.stopOnce.Do(func() {
		_ = c.stdin.Close()
		if !waitClosed(c.exited, c.grace) {
			_ = procgroup.Terminate(c.cmd)
			if !waitClosed(c.exited, c.grace/2+100*time.Millisecond) {
				c.kill()
				<-c.exited
			}
		}
		c.kill() // whatever the server left behind in its group
		waitClosed(c.stderrDone, time.Second)
		_ = c.stdout.Close()
	})
}

func waitClosed(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// captureStderr logs each line the child writes to stderr, cut at maxLine bytes. The
// text is logged, never interpreted.
func captureStderr(r io.ReadCloser, log *slog.Logger, maxLine int, done chan<- struct{}) {
	defer close(done)
	defer func() { _ = r.Close() }()
	br := bufio.NewReaderSize(r, max(maxLine, 16))
	for {
		line, err := br.ReadSlice('\n')
		truncated := false
		if errors.Is(err, bufio.ErrBufferFull) {
			truncated = true
			line = line[:min(len(line), maxLine)]
			logStderr(log, line, truncated)
			if !skipLine(br) {
				return
			}
			continue
		}
		if len(line) > 0 {
			logStderr(log, line, truncated)
		}
		if err != nil {
			return
		}
	}
}

// skipLine discards the rest of an over-long line; it returns false at EOF.
func skipLine(br *bufio.Reader) bool {
	for {
		_, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return err == nil
	}
}

func logStderr(log *slog.Logger, line []byte, truncated bool) {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	if truncated {
		log.Info("upstream stderr", "line", string(line), "truncated", true)
		return
	}
	log.Info("upstream stderr", "line", string(line))
}
