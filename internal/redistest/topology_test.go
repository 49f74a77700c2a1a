package redistest_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gatehouse-dev/gatehouse/internal/redistest"
)

func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t)
	if len(s.SentinelAddrs) != 3 || s.MasterName == "" {
		t.Fatalf("SentinelAddrs %q, MasterName %q: want three Sentinels and a name", s.SentinelAddrs, s.MasterName)
	}
	ctx := t.Context()
	for _, addr := range s.SentinelAddrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true})
		got, err := sc.GetMasterAddrByName(ctx, s.MasterName).Result()
		_ = sc.Close()
		if err != nil || net.JoinHostPort(got[0], got[1]) != s.Master.Addr {
			t.Fatalf("Sentinel %s: master %q, %v; want %s", addr, got, err, s.Master.Addr)
		}
	}
	if err := newClient(t, s.Replica.Addr).Set(ctx, "k", "v", time.Minute).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Errorf("SET on the replica before the failover: %v, want READONLY", err)
	}

	start := time.Now()
	s.KillMaster()
	s.WaitFailover(t)
	t.Logf("failover took %v", time.Since(start))
	if err := newClient(t, s.Replica.Addr).Set(ctx, "k", "v", time.Minute).Err(); err != nil {
		t.Errorf("SET on the promoted replica: %v", err)
	}
}

func TestSentinelAuth(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinelAuth(t, "gatehouse", "sentinel-secret")
	ctx := t.Context()
	for _, tt := range []struct {
		user, password string
		ok             bool
	}{
		{"", "", false},
		{"", "wrong", false},
		{"", "sentinel-secret", true},
		{"gatehouse", "sentinel-secret", true},
		{"gatehouse", "wrong", false},
		{"nobody", "sentinel-secret", false},
	} {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.SentinelAddrs[0], Username: tt.user, Password: tt.password, MaxRetries: -1, DisableIdentity: true})
		_, err := sc.GetMasterAddrByName(ctx, s.MasterName).Result()
		_ = sc.Close()
		if (err == nil) != tt.ok {
			t.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME as %q with password %q: %v, want success %v", tt.user, tt.password, err, tt.ok)
		}
	}
}

func TestCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	if len(c.Addrs) != 3 {
		t.Fatalf("Addrs = %q, want three nodes", c.Addrs)
	}
	ctx := t.Context()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs, MaxRetries: -1, DisableIdentity: true})
	defer cc.Close()
	prefix := c.Prefix(t)
	// Keys on every node: 100 keys spread over the slots of all three.
	for i := range 100 {
		if err := cc.Set(ctx, fmt.Sprintf("%sk%d", prefix, i), "v", time.Minute).Err(); err != nil {
			t.Fatalf("SET through the cluster client: %v", err)
		}
	}
	for _, addr := range c.Addrs {
		n, err := newClient(t, addr).DBSize(ctx).Result()
		if err != nil || n == 0 {
			t.Errorf("node %s holds %d keys (%v): want some of the 100", addr, n, err)
		}
	}
}
