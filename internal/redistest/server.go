package redistest

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/testproc"
)

const (
	// startTimeout bounds how long redis-server may take to answer PING.
	startTimeout = 20 * time.Second
	// startAttempts is how often a server is started again when it exits before it is
	// ready, which happens when another process took its free port in the meantime.
	startAttempts = 3
	pollInterval  = 20 * time.Millisecond
	// binEnv names the variable that overrides the redis-server binary.
	binEnv = "REDIS_SERVER_BIN"
	// logName is the log file of a redis-server or Sentinel in its directory.
	logName = "redis-server.log"
)

// Server is one running redis-server on 127.0.0.1.
type Server struct {
	// Addr is the server's host:port, 127.0.0.1 and a port that stays the same across
	// Restart.
	Addr string
	// TLS holds the certificate files of a server started with StartTLS; nil otherwise.
	TLS *TLSFiles

	bin, dir string
	extra    []string // arguments added to every launch (replication, cluster)
	mu       sync.Mutex
	proc     *testproc.Process // nil after Kill
}

// Start runs a redis-server for the test and stops it at the test's end.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, nil, nil)
}

// start runs a redis-server, speaking TLS with tlsFiles when they are not nil. extra,
// when not nil, returns the arguments added to the command line for the attempt's
// address, which s.Addr holds when it is called.
func start(t testing.TB, tlsFiles *TLSFiles, extra func(s *Server) ([]string, error)) *Server {
	t.Helper()
	s := &Server{bin: binary(t), dir: t.TempDir(), TLS: tlsFiles}
	for attempt := 1; ; attempt++ {
		addr, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		s.Addr = addr
		if extra != nil {
			if s.extra, err = extra(s); err != nil {
				t.Fatal(err)
			}
		}
		err = s.launch()
		if err == nil {
			break
		}
		if !errors.Is(err, testproc.ErrExited) || attempt == startAttempts {
			t.Fatal(err)
		}
		t.Logf("attempt %d: %v", attempt, err)
	}
	t.Cleanup(s.Kill)
	return s
}

// Kill ends the server at once with SIGKILL, as a crash or a lost host would, and waits
// for it. Clients see their connections drop and new ones refused. It does nothing when
// the server is not running.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	s.proc.Kill()
	s.proc = nil
}

// Pause freezes the server with SIGSTOP: its connections stay open and new ones are
// accepted by the kernel, but nothing is answered, as with a network that drops packets
// silently. Resume undoes it; the cleanup kills a paused server too.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume lets a paused server run again with SIGCONT.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		_ = s.proc.Signal(sig)
	}
}

// Restart starts the server again on the same address with the same settings, after a
// Kill (it kills a running one first). Its data is gone: it never persisted any.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	// The port was just freed; another process may not take it in the meantime, but a
	// moment of retry covers a slow release.
	var err error
	for range startAttempts {
		if err = s.launch(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("restarting redis-server on %s: %v", s.Addr, err)
}

// launch starts redis-server on s.Addr and waits until it answers PING.
func (s *Server) launch() error {
	_, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return err
	}
	args := []string{
		"--port", port,
		"--bind", "127.0.0.1",
		"--protected-mode", "yes",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--daemonize", "no",
		"--loglevel", "warning",
	}
	var tlsConfig *tls.Config
	if f := s.TLS; f != nil {
		args[1] = "0" // no plain TCP port
		args = append(args, "--tls-port", port, "--tls-cert-file", f.serverCert, "--tls-key-file", f.serverKey,
			"--tls-ca-cert-file", f.CAFile, "--tls-auth-clients", "yes")
		tlsConfig = f.config
	}
	args = append(args, s.extra...)
	p, err := testproc.Start(s.dir, s.bin, logName, args...)
	if err != nil {
		return err
	}
	if err := waitReady(p, s.Addr, tlsConfig, ""); err != nil {
		p.Kill()
		return err
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return nil
}

// waitReady polls addr with PING (after AUTH password when password is not empty) until
// it answers PONG, p exits (an error wrapping testproc.ErrExited), or startTimeout passes.
func waitReady(p *testproc.Process, addr string, tlsConfig *tls.Config, password string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	err := p.WaitReady(ctx, pollInterval, func(ctx context.Context) error {
		return ping(ctx, addr, tlsConfig, password)
	})
	switch {
	case errors.Is(err, testproc.ErrExited):
		return fmt.Errorf("redis-server on %s: %w", addr, err)
	case err != nil:
		return fmt.Errorf("redis-server on %s did not answer PING within %v: %w", addr, startTimeout, err)
	}
	return nil
}

// ping sends one inline PING to addr, over TLS with tlsConfig when it is not nil and
// after AUTH password when password is not empty, and checks the answer.
func ping(ctx context.Context, addr string, tlsConfig *tls.Config, password string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var conn net.Conn
	var err error
	if tlsConfig != nil {
		conn, err = (&tls.Dialer{Config: tlsConfig}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	r := bufio.NewReader(conn)
	if password != "" {
		if _, err := conn.Write([]byte("AUTH " + password + "\r\n")); err != nil {
			return err
		}
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) != "+OK" {
			return fmt.Errorf("AUTH answered %q", line)
		}
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// freeAddr returns a loopback address (127.0.0.1:port) that was free a moment ago.
func freeAddr() (string, error) {
	addrs, err := testproc.FreeAddrs(1)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// binary returns $REDIS_SERVER_BIN or redis-server on PATH. A missing binary fails the
// test under CI and skips it elsewhere.
func binary(t testing.TB) string {
	t.Helper()
	return lookBinary(t, "redis-server", binEnv)
}

// lookBinary returns $env, else name, found on PATH. A missing binary fails the test
// under CI and skips it elsewhere.
func lookBinary(t testing.TB, name, env string) string {
	t.Helper()
	return testproc.Lookup(t, name, env, "run `make redis-tools`", name)
}

// logTail returns the end of the running server's log, or a note that it is not running.
func (s *Server) logTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return "(not running)"
	}
	return s.proc.Tail(testproc.TailLimit)
}
