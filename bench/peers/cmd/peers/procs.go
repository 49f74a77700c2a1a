package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// proc is one server process of the benchmark.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan error
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// startProc starts bin with args, pinned to the CPU list cpus through taskset when cpus is not
// empty (taskset execs the program, so the pid is the server's), logging to logDir/name.log.
func startProc(name, logDir, cpus string, env []string, bin string, args ...string) (*proc, error) {
	if cpus != "" {
		args = append([]string{"-c", cpus, bin}, args...)
		bin = "taskset"
	}
	logf, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...) //nolint:gosec // a binary the benchmark built, with arguments it wrote
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); _ = logf.Close() }()
	return p, nil
}

// stop ends the process: SIGTERM, then SIGKILL after 5 s.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		p.done <- <-p.done
	}
}

// exited reports an early exit.
func (p *proc) exited() error {
	select {
	case err := <-p.done:
		p.done <- err
		return fmt.Errorf("%s exited (see its log): %w", p.name, err)
	default:
		return nil
	}
}

// waitReady polls check until it succeeds, the process exits, or 60 s pass.
func (p *proc) waitReady(check func() error) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if e := p.exited(); e != nil {
			return e
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 60 s: %w", p.name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func dialCheck(addr string) func() error {
	return func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err
	}
}

func httpCheck(url string) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(url + ": HTTP " + strconv.Itoa(resp.StatusCode))
		}
		return nil
	}
}

// freeAddrs returns n loopback addresses whose ports were free a moment ago.
func freeAddrs(n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	return out, nil
}

// pinSelf sets the CPU affinity of every thread of this process (taskset -a -p).
func pinSelf(cpus string) error {
	out, err := exec.Command("taskset", "-a", "-p", "-c", cpus, strconv.Itoa(os.Getpid())).CombinedOutput() //nolint:gosec // a CPU list from the mode
	if err != nil {
		return fmt.Errorf("taskset -a -p -c %s: %w: %s", cpus, err, out)
	}
	return nil
}
