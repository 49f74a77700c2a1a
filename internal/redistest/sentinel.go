package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gatehouse-dev/gatehouse/internal/testproc"
)

// Settings of the Sentinels [StartSentinel] runs: a master is down after a second without
// an answer, and a failover that stalls is retried after three, so that a test sees a
// failover within a few seconds.
const (
	// SentinelMasterName is the name under which the Sentinels monitor the master.
	SentinelMasterName = "gatehouse-test"

	sentinelCount           = 3
	sentinelQuorum          = 2
	sentinelDownAfter       = time.Second
	sentinelFailoverTimeout = 3 * time.Second
)

// Sentinel is a master set watched by three Sentinels, all on 127.0.0.1: a master, one
// replica of it, and three Sentinels with a quorum of two.
type Sentinel struct {
	// MasterName is the name the Sentinels monitor the master under.
	MasterName string
	// SentinelAddrs are the Sentinels' host:port addresses.
	SentinelAddrs []string
	// Master is the master at start; Replica is its replica, which the Sentinels promote
	// when Master is killed.
	Master, Replica *Server

	user      string // an ACL user of the Sentinels, "" for none
	password  string // the Sentinels' requirepass, "" for none
	sentinels []*testproc.Process
}

// StartSentinel runs a master, a replica of it and three Sentinels monitoring it under
// [SentinelMasterName] with quorum 2, down-after-milliseconds 1000 and failover-timeout
// 3000, and returns once every Sentinel knows the replica and the two other Sentinels, so
// that a failover can run. Every process stops at the test's end. The Sentinels' config
// files are in the test's temporary directory, where they rewrite them.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	return startSentinel(t, "", "")
}

// StartSentinelAuth is [StartSentinel] with Sentinels that require password for the
// default user (requirepass, and sentinel-pass between them) and, when user is not empty,
// also accept the ACL user user with the same password. The master and replica require
// no password.
func StartSentinelAuth(t testing.TB, user, password string) *Sentinel {
	t.Helper()
	for _, w := range []string{user, password} {
		if strings.ContainsAny(w, " \t\r\n\"'<>") {
			t.Fatalf("StartSentinelAuth: user and password must be single words, got %q", w)
		}
	}
	if password == "" {
		t.Fatal("StartSentinelAuth: the password must not be empty")
	}
	return startSentinel(t, user, password)
}

func startSentinel(t testing.TB, user, password string) *Sentinel {
	t.Helper()
	// A master waits repl-diskless-sync-delay (5 s by default) for more replicas before
	// it sends its data set to the first.
	noDelay := []string{"--repl-diskless-sync-delay", "0"}
	master := start(t, nil, func(*Server) ([]string, error) { return noDelay, nil })
	host, port, err := net.SplitHostPort(master.Addr)
	if err != nil {
		t.Fatal(err)
	}
	replica := start(t, nil, func(*Server) ([]string, error) {
		return append([]string{"--replicaof", host, port}, noDelay...), nil
	})
	s := &Sentinel{MasterName: SentinelMasterName, Master: master, Replica: replica, user: user, password: password}
	// Sentinels learn about replicas from the master's INFO, read when they connect and
	// then every ten seconds: start them once the replica is linked.
	s.waitFor(t, "the replica to sync with the master", func(ctx context.Context) error {
		return replicaLinked(ctx, replica.Addr)
	})
	bin := binary(t)
	for range sentinelCount {
		p, addr := s.launchSentinel(t, bin)
		s.sentinels = append(s.sentinels, p)
		s.SentinelAddrs = append(s.SentinelAddrs, addr)
		t.Cleanup(p.Kill)
	}
	s.waitFor(t, "the Sentinels to agree on the master", func(ctx context.Context) error {
		return s.agreed(ctx, master.Addr, sentinelCount-1, 1)
	})
	return s
}

// launchSentinel starts one Sentinel on a free port with a config file of its own, and
// waits until it answers PING.
func (s *Sentinel) launchSentinel(t testing.TB, bin string) (*testproc.Process, string) {
	t.Helper()
	dir := t.TempDir()
	host, port, err := net.SplitHostPort(s.Master.Addr)
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		addr, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		_, sport, _ := net.SplitHostPort(addr)
		conf := []string{
			"port " + sport,
			"bind 127.0.0.1",
			"daemonize no",
			"dir " + dir,
			"loglevel notice",
			fmt.Sprintf("sentinel monitor %s %s %s %d", s.MasterName, host, port, sentinelQuorum),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", s.MasterName, sentinelDownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", s.MasterName, sentinelFailoverTimeout.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s 1", s.MasterName),
		}
		if s.password != "" {
			conf = append(conf, "requirepass "+s.password, "sentinel sentinel-pass "+s.password)
		}
		if s.user != "" {
			conf = append(conf, "user "+s.user+" on >"+s.password+" ~* &* +@all")
		}
		path := filepath.Join(dir, "sentinel.conf")
		if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := testproc.Start(dir, bin, logName, path, "--sentinel")
		if err != nil {
			t.Fatal(err)
		}
		err = waitReady(p, addr, nil, s.password)
		if err == nil {
			return p, addr
		}
		p.Kill()
		if !errors.Is(err, testproc.ErrExited) || attempt == startAttempts {
			t.Fatalf("starting a Sentinel: %v", err)
		}
		t.Logf("Sentinel attempt %d: %v", attempt, err)
	}
}

// KillMaster kills the master at once, as [Server.Kill] does; the Sentinels then promote
// the replica, which [Sentinel.WaitFailover] waits for.
func (s *Sentinel) KillMaster() { s.Master.Kill() }

// WaitFailover waits until every Sentinel names the replica as the master, failing the
// test after 20 s.
func (s *Sentinel) WaitFailover(t testing.TB) {
	t.Helper()
	s.waitFor(t, "the Sentinels to promote the replica", func(ctx context.Context) error {
		return s.agreed(ctx, s.Replica.Addr, -1, -1)
	})
}

// agreed checks that every Sentinel names master as the master, sees it up, and, when
// not negative, knows otherSentinels other Sentinels and replicas replicas.
func (s *Sentinel) agreed(ctx context.Context, master string, otherSentinels, replicas int) error {
	for _, addr := range s.SentinelAddrs {
		c := redis.NewSentinelClient(&redis.Options{Addr: addr, Password: s.password, MaxRetries: -1, DisableIdentity: true})
		info, err := c.Master(ctx, s.MasterName).Result()
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("Sentinel %s: SENTINEL MASTER: %w", addr, err)
		}
		got := net.JoinHostPort(info["ip"], info["port"])
		switch {
		case got != master:
			return fmt.Errorf("Sentinel %s names %s as the master, want %s", addr, got, master)
		case info["flags"] != "master":
			return fmt.Errorf("Sentinel %s flags the master %q", addr, info["flags"])
		case otherSentinels >= 0 && info["num-other-sentinels"] != strconv.Itoa(otherSentinels):
			return fmt.Errorf("Sentinel %s knows %s other Sentinels, want %d", addr, info["num-other-sentinels"], otherSentinels)
		case replicas >= 0 && info["num-slaves"] != strconv.Itoa(replicas):
			return fmt.Errorf("Sentinel %s knows %s replicas, want %d", addr, info["num-slaves"], replicas)
		}
	}
	return nil
}

// waitFor polls check until it succeeds, failing the test with check's last error and
// every process's log after startTimeout.
func (s *Sentinel) waitFor(t testing.TB, what string, check func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := poll(ctx, check); err != nil {
		var logs strings.Builder
		fmt.Fprintf(&logs, "--- master %s:\n%s\n--- replica %s:\n%s\n", s.Master.Addr, s.Master.logTail(), s.Replica.Addr, s.Replica.logTail())
		for i, p := range s.sentinels {
			fmt.Fprintf(&logs, "--- Sentinel %s:\n%s\n", s.SentinelAddrs[i], p.Tail(testproc.TailLimit))
		}
		t.Fatalf("waiting %v for %s: %v\n%s", startTimeout, what, err, logs.String())
	}
}

// poll calls check every 50 ms until it returns nil, and returns its last error once ctx
// is done.
func poll(ctx context.Context, check func(ctx context.Context) error) error {
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-ticker.C:
		}
	}
}

// replicaLinked checks that the server at addr is a replica whose link to its master is up.
func replicaLinked(ctx context.Context, addr string) error {
	info, err := infoFields(ctx, addr, "replication")
	if err != nil {
		return err
	}
	if info["role"] != "slave" || info["master_link_status"] != "up" {
		return fmt.Errorf("replica %s: role %q, master_link_status %q", addr, info["role"], info["master_link_status"])
	}
	return nil
}

// infoFields returns the fields of INFO section at addr.
func infoFields(ctx context.Context, addr, section string) (map[string]string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true})
	defer func() { _ = c.Close() }()
	text, err := c.Info(ctx, section).Result()
	if err != nil {
		return nil, fmt.Errorf("%s: INFO %s: %w", addr, section, err)
	}
	return parseFields(text), nil
}

// parseFields parses the "name:value" lines of INFO or CLUSTER INFO.
func parseFields(text string) map[string]string {
	fields := map[string]string{}
	for line := range strings.Lines(text) {
		if name, value, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[name] = value
		}
	}
	return fields
}
