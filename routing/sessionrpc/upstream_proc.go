package sessionrpc

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/routing/procgroup"
)

// maxLogLine bounds one logged line of the upstream command's output.
const maxLogLine = 4096

// safeEnv are the variables the upstream command inherits from the gateway.
var safeEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR", "TZ", "GATEHOUSE_BIN"}

// supervisor keeps an upstream command running: started at once, started again
// restart_delay after it exits, stopped (SIGTERM to its process group, then SIGKILL
// after stop_grace) by stop.
type supervisor struct {
	cfg  UpstreamConfig
	log  *slog.Logger
	quit chan struct{}
	done chan struct{}

	mu      sync.Mutex
	up      bool
	exitMsg string
	refs    int // targets holding the supervisor (share, stop)
	once    sync.Once
}

func startSupervisor(cfg UpstreamConfig, log *slog.Logger) *supervisor {
	p := &supervisor{cfg: cfg, log: log, quit: make(chan struct{}), done: make(chan struct{}), exitMsg: "not started yet", refs: 1}
	go p.loop()
	return p
}

// share hands the running supervisor to one more target (a reload's, whose command is
// the same): false once it has been stopped by its last holder.
func (p *supervisor) share() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refs == 0 {
		return false
	}
	p.refs++
	return true
}

// sameCommand reports whether cfg runs the same process as p's: command, arguments,
// environment, directory and the supervision timings.
func (p *supervisor) sameCommand(cfg UpstreamConfig) bool {
	a, b := p.cfg, cfg
	return a.Command == b.Command && slices.Equal(a.Args, b.Args) && maps.Equal(a.Env, b.Env) && a.Dir == b.Dir &&
		a.RestartDelay == b.RestartDelay && a.StopGrace == b.StopGrace
}

// running reports whether the command is running.
func (p *supervisor) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up
}

// lastExit describes why the command is not running.
func (p *supervisor) lastExit() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitMsg
}

func (p *supervisor) set(up bool, msg string) {
	p.mu.Lock()
	p.up, p.exitMsg = up, msg
	p.mu.Unlock()
}

// stop releases one holder's share; the last one ends the command and the supervision,
// returning once the process is reaped.
func (p *supervisor) stop() {
	p.mu.Lock()
	p.refs--
	last := p.refs == 0
	p.mu.Unlock()
	if !last {
		return
	}
	p.once.Do(func() { close(p.quit) })
	<-p.done
}

func (p *supervisor) env() []string {
	var env []string
	for _, k := range safeEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	keys := make([]string, 0, len(p.cfg.Env))
	for k := range p.cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+p.cfg.Env[k])
	}
	return env
}

func (p *supervisor) loop() {
	defer close(p.done)
	for {
		if stopped := p.runOnce(); stopped {
			return
		}
		t := time.NewTimer(p.cfg.RestartDelay)
		select {
		case <-p.quit:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// runOnce runs the command until it exits (false) or stop is called (true).
func (p *supervisor) runOnce() bool {
	cmd := exec.Command(p.cfg.Command, p.cfg.Args...) //nolint:gosec // the command comes from the operator's configuration
	cmd.Dir = p.cfg.Dir
	cmd.Env = p.env()
	procgroup.Set(cmd)
	out := &logWriter{log: p.log}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = p.cfg.StopGrace
	if err := cmd.Start(); err != nil {
		p.set(false, "starting: "+err.Error())
		p.log.Warn("session upstream command did not start", "err", err)
		return false
	}
	p.set(true, "")
	p.log.Info("session upstream command started", "pid", cmd.Process.Pid)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		p.set(false, exitReason(err))
		p.log.Warn("session upstream command exited", "reason", exitReason(err))
		return false
	case <-p.quit:
		_ = procgroup.Terminate(cmd)
		t := time.NewTimer(p.cfg.StopGrace)
		select {
		case err := <-exited:
			t.Stop()
			p.log.Info("session upstream command stopped", "reason", exitReason(err))
		case <-t.C:
			_ = procgroup.Kill(cmd)
			p.log.Warn("session upstream command killed after stop_grace", "reason", exitReason(<-exited))
		}
		_ = procgroup.Kill(cmd) // whatever it left behind in its group
		p.set(false, "stopped")
		return true
	}
}

func exitReason(err error) string {
	if err == nil {
		return "exit status 0"
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.String()
	}
	return err.Error()
}

// logWriter logs each line written to it (cut at maxLogLine bytes); the text is logged,
// never interpreted.
type logWriter struct {
	log  *slog.Logger
	mu   sync.Mutex
	line []byte
}

func (w *logWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			w.line = append(w.line, b[:min(len(b), max(0, maxLogLine-len(w.line)))]...)
			break
		}
		w.line = append(w.line, b[:min(i, max(0, maxLogLine-len(w.line)))]...)
		w.log.Info("session upstream output", "line", string(w.line))
		w.line = w.line[:0]
		b = b[i+1:]
	}
	return n, nil
}

var _ io.Writer = (*logWriter)(nil)
