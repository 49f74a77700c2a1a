package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

const (
	// clusterSize is how many master nodes [StartCluster] runs.
	clusterSize = 3
	// clusterSlots is how many hash slots a Redis Cluster has.
	clusterSlots = 16384
	// cliEnv names the variable that overrides the redis-cli binary.
	cliEnv = "REDIS_CLI_BIN"
)

// Cluster is a Redis Cluster of three masters without replicas on 127.0.0.1, made with
// `redis-cli --cluster create`.
type Cluster struct {
	// Addrs are the nodes' host:port addresses, also their seed addresses.
	Addrs []string
	// Nodes are the nodes, in the order of Addrs.
	Nodes []*Server
}

// StartCluster runs three cluster-enabled redis-servers without persistence (cluster-node
// timeout 2 s, each with a client port and a cluster bus port of its own), joins them with
// `redis-cli --cluster create` ($REDIS_CLI_BIN, else redis-cli on PATH), which spreads the
// hash slots over them, and returns once CLUSTER INFO says cluster_state:ok with every
// slot assigned and every node known on every node. The nodes stop at the test's end.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	cli := lookBinary(t, "redis-cli", cliEnv)
	c := &Cluster{}
	for range clusterSize {
		n := start(t, nil, clusterArgs)
		c.Nodes = append(c.Nodes, n)
		c.Addrs = append(c.Addrs, n.Addr)
	}
	// One deadline for joining the nodes and for the cluster to be ready.
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput() //nolint:gosec // the located binary, with arguments written here
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s\n%s", err, out, c.logs())
	}
	if err := poll(ctx, c.ready); err != nil {
		t.Fatalf("waiting %v for the cluster: %v\n%s", startTimeout, err, c.logs())
	}
	return c
}

// clusterArgs returns the arguments of a cluster node: a cluster bus port free a moment
// ago, and the node's cluster state file in its directory.
func clusterArgs(s *Server) ([]string, error) {
	bus, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, busPort, _ := net.SplitHostPort(bus)
	conf := filepath.Join(s.dir, "nodes.conf")
	// A file left by an attempt that failed would name another port.
	if err := os.Remove(conf); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", conf,
		"--cluster-node-timeout", "2000",
		"--cluster-port", busPort,
	}, nil
}

// ready checks CLUSTER INFO on every node.
func (c *Cluster) ready(ctx context.Context) error {
	for _, addr := range c.Addrs {
		rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true})
		text, err := rc.ClusterInfo(ctx).Result()
		_ = rc.Close()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER INFO: %w", addr, err)
		}
		info := parseFields(text)
		if info["cluster_state"] != "ok" || info["cluster_slots_ok"] != strconv.Itoa(clusterSlots) ||
			info["cluster_known_nodes"] != strconv.Itoa(clusterSize) {
			return fmt.Errorf("%s: cluster_state %q, cluster_slots_ok %q, cluster_known_nodes %q",
				addr, info["cluster_state"], info["cluster_slots_ok"], info["cluster_known_nodes"])
		}
	}
	return nil
}

// Prefix returns a key prefix of the test's own, as [Server.Prefix] does, and deletes the
// keys under it on every node at the test's end.
func (c *Cluster) Prefix(t testing.TB) string {
	t.Helper()
	prefix := newPrefix(t)
	t.Cleanup(func() {
		for _, n := range c.Nodes {
			n.FlushPrefix(t, prefix)
		}
	})
	return prefix
}

// logs returns the end of every node's log.
func (c *Cluster) logs() string {
	var b strings.Builder
	for _, n := range c.Nodes {
		fmt.Fprintf(&b, "--- node %s:\n%s\n", n.Addr, n.logTail())
	}
	return b.String()
}
