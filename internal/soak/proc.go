package soak

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one child process of the run that can be killed and started again with the
// same command line (and so the same ports).
type proc struct {
	name string
	args []string
	env  []string
	log  string // file its stdout and stderr go to (appended across restarts, not runs)

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

func newProc(dir, name string, env []string, args ...string) *proc {
	return &proc{name: name, args: args, env: env, log: filepath.Join(dir, name+".log")}
}

// start runs the process; it is in its own process group, so a kill of the group takes
// whatever it spawned (the MCP child of a replica) with it.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if p.starts == 0 {
		flags |= os.O_TRUNC // a previous run's log
	}
	out, err := os.OpenFile(p.log, flags, 0o600) //nolint:gosec // the run's own directory
	if err != nil {
		return err
	}
	cmd := exec.Command(p.args[0], p.args[1:]...) //nolint:gosec // the run's own binaries
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	p.starts++
	return nil
}

// pid of the running process, 0 when none.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	select {
	case <-p.exited:
		return 0
	default:
	}
	return p.cmd.Process.Pid
}

// signal sends sig to the process (not its group).
func (p *proc) signal(sig syscall.Signal) error {
	pid := p.pid()
	if pid == 0 {
		return fmt.Errorf("%s is not running", p.name)
	}
	return syscall.Kill(pid, sig)
}

// kill sends SIGKILL to the process group and waits for the process to be reaped.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

// children are the pids whose parent is the process (a child started by any of its threads).
func (p *proc) children() []int {
	pid := p.pid()
	if pid == 0 {
		return nil
	}
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for f := range strings.FieldsSeq(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// tail is the end of the process's log.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// rssKB reads VmRSS of pid from /proc/<pid>/status.
func rssKB(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fs := strings.Fields(rest)
			if len(fs) == 0 {
				break
			}
			return strconv.ParseFloat(fs[0], 64)
		}
	}
	return 0, errors.New("no VmRSS")
}

// openFiles counts /proc/<pid>/fd.
func openFiles(pid int) (float64, error) {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, err
	}
	return float64(len(es)), nil
}

// tcpSocket is one row of a /proc/<pid>/net/tcp table.
type tcpSocket struct {
	local, remote int // ports
	established   bool
}

// sockets returns pid's own TCP sockets (/proc/<pid>/fd links "socket:[inode]" matched
// against /proc/<pid>/net/tcp and tcp6, which list the whole network namespace's).
func sockets(pid int) ([]tcpSocket, error) {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := make(map[string]bool, len(es))
	for _, e := range es {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []tcpSocket
	for _, table := range []string{"tcp", "tcp6"} {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		out = append(out, parseTCPTable(string(raw), inodes)...)
	}
	return out, nil
}

// parseTCPTable reads the rows of a /proc/net/tcp table whose inode is one of inodes.
func parseTCPTable(table string, inodes map[string]bool) []tcpSocket {
	var out []tcpSocket
	for _, line := range strings.Split(table, "\n")[1:] {
		fs := strings.Fields(line)
		if len(fs) < 10 || !inodes[fs[9]] {
			continue
		}
		_, lp, ok1 := strings.Cut(fs[1], ":") // local_address: hex IP:hex port
		_, rp, ok2 := strings.Cut(fs[2], ":") // rem_address
		l, err1 := strconv.ParseUint(lp, 16, 16)
		r, err2 := strconv.ParseUint(rp, 16, 16)
		if !ok1 || !ok2 || err1 != nil || err2 != nil {
			continue
		}
		out = append(out, tcpSocket{local: int(l), remote: int(r), established: fs[3] == "01"})
	}
	return out
}

// freeAddr is a 127.0.0.1 port free now; it is kept for the whole run (restarts reuse it).
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String(), nil
}

// waitTCP waits until addr accepts a connection.
func waitTCP(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not accepting within %v: %w", addr, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// redisCmd sends one command to the Redis at addr and returns its reply's raw bytes (a
// bulk string's contents, a status line).
func redisCmd(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write(b.Bytes()); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "-"):
		return "", errors.New(line[1:])
	case strings.HasPrefix(line, "$"):
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("redis reply %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	default:
		return line[1:], nil
	}
}

// redisUsedMemory is INFO memory's used_memory in bytes.
func redisUsedMemory(addr string) (float64, error) {
	info, err := redisCmd(addr, "INFO", "memory")
	if err != nil {
		return 0, err
	}
	for l := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "used_memory:"); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, errors.New("INFO memory has no used_memory")
}

// redisPort is the port of the platform's Redis.
func (p *Platform) redisPort() int {
	n, _ := strconv.Atoi(p.Redis[strings.LastIndexByte(p.Redis, ':')+1:])
	return n
}
