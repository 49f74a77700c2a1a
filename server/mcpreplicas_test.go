package server

import (
	"fmt"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/redistest"
)

// startMCPReplicas starts two gateways from yaml (which must not name a state store)
// sharing srv, a real Redis, under a key prefix of this test's own, and waits until both
// list the bridged tools.
func startMCPReplicas(t *testing.T, srv *redistest.Server, yaml string) (a, b *testServer) {
	t.Helper()
	yaml += fmt.Sprintf("\nstate: {backend: redis, redis: {addrs: [%q], key_prefix: %q}}\n", srv.Addr, srv.Prefix(t))
	a = startWith(t, yaml, Options{})
	b = startWith(t, yaml, Options{})
	waitForTools(t, a)
	waitForTools(t, b)
	return a, b
}
