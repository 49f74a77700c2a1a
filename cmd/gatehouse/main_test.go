package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// binary is the gatehouse binary built once for the tests that run it as a process.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gatehouse-cmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "gatehouse")
	build := exec.Command("go", "build", "-race", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building gatehouse:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func TestRunCommands(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(good, []byte("routing: {demo: {}}\n"), 0o600)
	_ = os.WriteFile(bad, []byte("server:\n  boundary:\n    adr: x\nlog: {level: loud}\n"), 0o600)
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr []string
	}{
		{[]string{"version"}, 0, "gatehouse ", nil},
		{[]string{"help"}, 0, "usage:", nil},
		{nil, 2, "", []string{"usage:"}},
		{[]string{"frobnicate"}, 2, "", []string{`unknown command "frobnicate"`}},
		{[]string{"validate"}, 2, "", []string{"--config is required"}},
		{[]string{"validate", "--config", good}, 0, "good.yaml: ok", nil},
		{[]string{"validate", "--config", bad}, 1, "", []string{bad + ":3:5:", `unknown key "adr"`, bad + ":4:14:"}},
		{[]string{"validate", "--config", filepath.Join(dir, "missing.yaml")}, 1, "", []string{"missing.yaml"}},
		{[]string{"serve", "--config", bad}, 1, "", []string{bad + ":3:5:"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout %q lacks %q", stdout.String(), tt.stdout)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q", stderr.String(), w)
				}
			}
		})
	}
}

// process is a gatehouse serve process started by a test.
type process struct {
	cmd      *exec.Cmd
	rpc      string
	admin    string
	internal string // "off" when the internal listener is off
	stderr   *lockedBuffer
	exited   chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// servingLine is the log line gatehouse writes once its listeners are bound.
type servingLine struct {
	Msg      string `json:"msg"`
	Boundary string `json:"boundary"`
	Admin    string `json:"admin"`
	Internal string `json:"internal"`
}

// startProcess runs `gatehouse serve` with configFile on ports the kernel picks (the
// addresses are read back from its "serving" log line, so no other test can take them in
// between) and waits until it is ready.
func startProcess(t *testing.T, configFile string) *process {
	t.Helper()
	return startProcessEnv(t, configFile, nil)
}

// startProcessEnv is startProcess with env added to the process's environment and extra
// arguments after the listen flags.
func startProcessEnv(t *testing.T, configFile string, env []string, args ...string) *process {
	t.Helper()
	p := &process{
		cmd: exec.Command(binary, append([]string{"serve", "--config", configFile,
			"--boundary-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, args...)...),
		stderr: &lockedBuffer{},
		exited: make(chan error, 1),
	}
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("gatehouse stderr:\n%s", p.stderr.String())
		}
	})
	if err := p.waitReady(readyTimeout); err != nil {
		t.Fatalf("gatehouse did not become ready within %v: %v\n--- the end of its stderr:\n%s", readyTimeout, err, p.stderrTail())
	}
	return p
}

// readyTimeout bounds how long startProcess waits for a gateway to bind its listeners and
// answer /readyz 200. It is generous because under the full suite's load on two cores a
// -race binary loading its backends takes many seconds; a gateway that is ready sooner is
// used at once.
const readyTimeout = 60 * time.Second

// waitReady waits until the process has logged its "serving" line and /readyz answers
// 200, for at most within. The error says which step was not done: no "serving" line
// yet, /readyz unreachable, or /readyz's last status and body (which names each target
// that is not ready); or that the process exited.
func (p *process) waitReady(within time.Duration) error {
	client := &http.Client{Timeout: 5 * time.Second}
	last := errors.New(`no "serving" log line: the listeners are not bound yet`)
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-p.exited:
			p.exited <- err // for the cleanup
			how := "exit status 0"
			if err != nil {
				how = err.Error()
			}
			return fmt.Errorf("it exited (%s) before it was ready; last check: %w", how, last)
		default:
		}
		if p.rpc == "" {
			l, ok := p.serving()
			if !ok {
				continue
			}
			p.rpc, p.admin, p.internal = "http://"+l.Boundary+"/rpc", "http://"+l.Admin, l.Internal
		}
		resp, err := client.Get(p.admin + "/readyz")
		if err != nil {
			last = fmt.Errorf("GET %s/readyz: %w", p.admin, err)
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("GET %s/readyz: %d %s", p.admin, resp.StatusCode, bytes.TrimSpace(body))
	}
	return last
}

// stderrTail is the end of what the process wrote to stderr, for failure messages.
func (p *process) stderrTail() string {
	const limit = 8 << 10
	s := p.stderr.String()
	if len(s) > limit {
		s = "…" + s[len(s)-limit:]
	}
	return s
}

// serving finds the "serving" log line.
func (p *process) serving() (servingLine, bool) {
	for line := range strings.SplitSeq(p.stderr.String(), "\n") {
		var l servingLine
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "serving" {
			return l, true
		}
	}
	return servingLine{}, false
}

func (p *process) call(body string) (string, error) {
	resp, err := http.Post(p.rpc, "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return string(b), err
}

func (p *process) waitExit(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("gatehouse exited with %v", err)
		}
	case <-time.After(within):
		t.Fatalf("gatehouse still running %v after SIGTERM", within)
	}
}

func TestServeSIGTERMUnderLoad(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	_ = os.WriteFile(cfg, []byte("auth: {anonymous: {}}\nrouting: {demo: {delay: 2s}}\nserver: {shutdown_grace: 15s}\n"), 0o600)
	p := startProcess(t, cfg)
	const calls = 24
	var wg sync.WaitGroup
	var failed atomic.Int32
	var firstErr atomic.Value
	for i := range calls {
		wg.Go(func() {
			out, err := p.call(fmt.Sprintf(`{"jsonrpc":"2.0","method":"subtract","params":[%d,1],"id":%d}`, i+1, i))
			if err == nil && !strings.Contains(out, fmt.Sprintf(`"result":%d,`, i)) {
				err = fmt.Errorf("wrong answer %s", out)
			}
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		})
	}
	time.Sleep(700 * time.Millisecond) // every call is now inside its 2 s of backend latency
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d in-flight calls failed across SIGTERM; first: %v", n, calls, firstErr.Load())
	}
	p.waitExit(t, 15*time.Second)
	if !strings.Contains(p.stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no clean stop logged")
	}
}

func TestServeSIGHUPReloadsUnderLoad(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	write := func(maxBatch int) {
		body := fmt.Sprintf("auth: {anonymous: {}}\nrouting: {demo: {}}\nbatch: {max_size: %d}\nserver: {watch_config: false}\n", maxBatch)
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(2)
	p := startProcess(t, cfg)
	three := `[{"jsonrpc":"2.0","method":"get_data","id":1},{"jsonrpc":"2.0","method":"get_data","id":2},{"jsonrpc":"2.0","method":"get_data","id":3}]`
	if out, _ := p.call(three); !strings.Contains(out, "max_batch_size") {
		t.Fatalf("max_size 2 not in force: %s", out)
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if out, err := p.call(`{"jsonrpc":"2.0","method":"subtract","params":[3,1],"id":1}`); err != nil || !strings.Contains(out, `"result":2,`) {
					failed.Add(1)
				} else {
					ok.Add(1)
				}
			}
		})
	}
	for i := range 10 {
		write(3 + i%2)
		_ = p.cmd.Process.Signal(syscall.SIGHUP)
		time.Sleep(30 * time.Millisecond)
	}
	write(3)
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool { out, _ := p.call(three); return strings.HasPrefix(out, "[") })

	// An invalid file is refused; the last good configuration keeps serving.
	_ = os.WriteFile(cfg, []byte("batch: {max_size: nope}\n"), 0o600)
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool { return strings.Contains(p.stderr.String(), "reload refused") })
	if out, _ := p.call(three); !strings.HasPrefix(out, "[") {
		t.Fatalf("after a refused reload: %s", out)
	}
	stop()
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d calls failed during reloads", failed.Load(), failed.Load()+ok.Load())
	}
	t.Logf("%d calls during 11 reloads, none failed", ok.Load())
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
