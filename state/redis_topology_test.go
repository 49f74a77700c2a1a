package state_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gatehouse-dev/gatehouse/internal/redistest"
	"github.com/gatehouse-dev/gatehouse/state"
	"github.com/gatehouse-dev/gatehouse/state/statetest"
)

// failoverBudget bounds how long calls may fail after the master is killed: the Sentinels
// see it down after a second and promote the replica a few seconds later; the rest is
// margin for a loaded machine.
const failoverBudget = 15 * time.Second

// openRedis returns a Redis backend on cfg, closed at the end of the test.
func openRedis(t *testing.T, cfg state.RedisConfig) *state.Redis {
	t.Helper()
	r, err := state.NewRedis(cfg)
	if err != nil {
		t.Fatalf("NewRedis: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// runContracts runs the KV, CellRater and Bus contract suites on backends opened with cfg.
func runContracts(t *testing.T, cfg state.RedisConfig) {
	t.Helper()
	t.Run("KV", func(t *testing.T) {
		statetest.RunKV(t, func(t *testing.T) state.KV { return openRedis(t, cfg) })
	})
	t.Run("CellRater", func(t *testing.T) {
		statetest.RunCellRater(t, func(t *testing.T) statetest.CellKV { return openRedis(t, cfg) })
	})
	t.Run("Bus", func(t *testing.T) {
		statetest.RunBus(t, func(t *testing.T) statetest.BusKV { return openRedis(t, cfg) })
	})
}

// TestRedisSentinelContract runs the contract suites through three Sentinels.
func TestRedisSentinelContract(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t)
	runContracts(t, state.RedisConfig{Addrs: s.SentinelAddrs, MasterName: s.MasterName, KeyPrefix: s.Master.Prefix(t)})
}

// TestRedisClusterContract runs the contract suites on a three-node Redis Cluster, reached
// through one seed with cluster: true and through every node's address without it (several
// addresses mean Cluster).
func TestRedisClusterContract(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	prefix := c.Prefix(t)
	tests := []struct {
		name string
		cfg  state.RedisConfig
	}{
		// c.Addrs[:1] has room to grow, shared by every backend the suites open: go-redis
		// appending discovered nodes to it in place would be a data race (-race).
		{"OneSeedClusterFlag", state.RedisConfig{Addrs: c.Addrs[:1], Cluster: true, KeyPrefix: prefix}},
		{"SeveralAddrs", state.RedisConfig{Addrs: c.Addrs, KeyPrefix: prefix}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runContracts(t, tt.cfg) })
	}
}

// TestRedisClusterBusAcrossNodes checks that a subscription reaches every node's messages:
// Redis Cluster sends a PUBLISH received by any node to every node, so replicas whose
// connections land on different nodes share channels.
func TestRedisClusterBusAcrossNodes(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	prefix := c.Prefix(t)
	r := openRedis(t, state.RedisConfig{Addrs: c.Addrs, KeyPrefix: prefix})
	ctx := t.Context()
	sub, err := r.Subscribe(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for _, addr := range c.Addrs {
		node := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true})
		err := node.Publish(ctx, prefix+"events", "via "+addr).Err()
		_ = node.Close()
		if err != nil {
			t.Fatalf("PUBLISH on node %s: %v", addr, err)
		}
		if got := statetest.Receive(t, sub); string(got) != "via "+addr {
			t.Errorf("received %q, want the message published on node %s", got, addr)
		}
	}
}

// TestRedisSeveralServersAreNotACluster pins down what several addresses of standalone
// servers mean: a Cluster, as documented, not a load-balanced or failover set of servers.
// Every call fails with an error that names the cause; it is no ErrUnavailable, since
// waiting does not help a misconfiguration.
func TestRedisSeveralServersAreNotACluster(t *testing.T) {
	t.Parallel()
	a, b := redistest.Start(t), redistest.Start(t)
	r := openRedis(t, state.RedisConfig{Addrs: []string{a.Addr, b.Addr}, KeyPrefix: a.Prefix(t)})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for name, err := range map[string]error{
		"Set":  r.Set(ctx, "k", []byte("v"), time.Minute),
		"Ping": r.Ping(ctx),
	} {
		if err == nil || errors.Is(err, state.ErrUnavailable) || !strings.Contains(err.Error(), "cluster support disabled") {
			t.Errorf("%s on two standalone servers: %v, want Redis's \"cluster support disabled\" error", name, err)
		}
	}
}

// TestRedisSentinelFailover kills the master under a backend and a subscription: calls
// may fail as unavailable during the failover, nothing else, and within failoverBudget a
// write to the promoted replica is readable; the subscription delivers one nil message,
// then messages again.
func TestRedisSentinelFailover(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t)
	cfg := state.RedisConfig{Addrs: s.SentinelAddrs, MasterName: s.MasterName, KeyPrefix: s.Master.Prefix(t),
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, PoolSize: 4}
	r := openRedis(t, cfg)
	pub := openRedis(t, cfg)
	ctx := t.Context()
	if err := r.Set(ctx, "before", []byte("v1"), time.Minute); err != nil {
		t.Fatal(err)
	}
	sub, err := r.Subscribe(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	killed := time.Now()
	s.KillMaster()
	deadline := killed.Add(failoverBudget)
	// eventually calls f until it succeeds; every failure must be ErrUnavailable.
	eventually := func(what string, f func() error) {
		t.Helper()
		for {
			err := f()
			if err == nil {
				return
			}
			if !errors.Is(err, state.ErrUnavailable) {
				t.Fatalf("%s during the failover: %v, want nil or ErrUnavailable", what, err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still failing %v after the master was killed: %v", what, failoverBudget, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	var failures int
	eventually("Set", func() error {
		err := r.Set(ctx, "after", []byte("v2"), time.Minute)
		if err != nil {
			failures++
		}
		return err
	})
	t.Logf("writes succeeded again %v after the kill, %d failed calls before", time.Since(killed), failures)
	eventually("Get", func() error {
		v, ok, err := r.Get(ctx, "after")
		if err == nil && (!ok || string(v) != "v2") {
			t.Fatalf("Get of a key written after the failover = %q, %v; want v2", v, ok)
		}
		return err
	})
	// Replication is asynchronous: the key written before may be lost, never altered.
	if v, ok, err := r.Get(ctx, "before"); err != nil || (ok && string(v) != "v1") {
		t.Errorf("Get of a key written before the failover = %q, %v, %v; want v1 or absent", v, ok, err)
	}
	s.WaitFailover(t)

	select {
	case m, ok := <-sub.C():
		if !ok || m != nil {
			t.Fatalf("first delivery after the failover = %q, %v; want a nil message", m, ok)
		}
	case <-time.After(failoverBudget):
		t.Fatalf("no nil message within %v of the writes succeeding", failoverBudget)
	}
	eventually("Publish", func() error { return pub.Publish(ctx, "c", []byte("after")) })
	if got := statetest.Receive(t, sub); string(got) != "after" {
		t.Errorf("received %q after the failover, want after", got)
	}
}

// TestRedisSentinelAuth runs Sentinels that require a password, and know an ACL user:
// without the right credentials the master cannot be found and calls fail as unavailable;
// with them, they work.
func TestRedisSentinelAuth(t *testing.T) {
	t.Parallel()
	const user, password = "gatehouse", "sentinel-secret"
	s := redistest.StartSentinelAuth(t, user, password)
	prefix := s.Master.Prefix(t)
	tests := []struct {
		name, sentinelUser, sentinelPassword string
		ok                                   bool
	}{
		{"NoPassword", "", "", false},
		{"WrongPassword", "", "wrong", false},
		{"UnknownUser", "nobody", password, false},
		{"Password", "", password, true},
		{"UserAndPassword", user, password, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := openRedis(t, state.RedisConfig{Addrs: s.SentinelAddrs, MasterName: s.MasterName, KeyPrefix: prefix,
				SentinelUsername: tt.sentinelUser, SentinelPassword: tt.sentinelPassword, DialTimeout: time.Second})
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err := r.Set(ctx, tt.name, []byte("v"), time.Minute)
			if !tt.ok {
				wantUnavailable(t, "Set", err)
				wantUnavailable(t, "Ping", r.Ping(ctx))
				return
			}
			if err != nil {
				t.Fatalf("Set: %v", err)
			}
			if v, ok, err := r.Get(ctx, tt.name); err != nil || !ok || string(v) != "v" {
				t.Errorf("Get = %q, %v, %v; want v", v, ok, err)
			}
		})
	}
}
