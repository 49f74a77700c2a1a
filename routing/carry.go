package routing

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// What a reload carries over from the table serving to the one built beside it, when the
// configuration of a target did not change:
//
//   - an MCP upstream: shared by both bridges (mcpbackend.CarryOver with the serving
//     table's MCP target) — same child process, same sessions, same catalog; it stops when
//     the last bridge holding it closes;
//   - a gRPC backend: renewed over the same connection (RenewGRPC), its descriptors loaded
//     anew, since a .proto file or the backend's reflection may have changed; the
//     connection closes with the last backend holding it.
//
// The new table takes traffic once every target that can serve in the old one can serve
// in it too (AwaitReady), so calls never meet a target still starting.

// MCPOf returns tb's MCP target; nil for a nil table or one without it. It is what
// mcpbackend.CarryOver takes when a table is built beside tb.
func MCPOf(tb *Table) *mcpbackend.Target {
	if tb == nil {
		return nil
	}
	return tb.MCP()
}

// RenewGRPC is BuildOptions.GRPC for a table built beside tb: the backend of cfg renewed
// from tb's when tb has one of the same configuration, else a new one. A nil tb (the first
// build) always builds a new one.
func (tb *Table) RenewGRPC(cfg grpcbackend.Config, log *slog.Logger, now func() time.Time) (*grpcbackend.Backend, error) {
	if tb != nil {
		for _, t := range tb.Targets() {
			if b, ok := t.(renewable); ok && t.Name() == cfg.Name && b.Carries(cfg) {
				if nb, err := b.Renew(log, now); err == nil {
					return nb, nil
				}
			}
		}
	}
	return grpcbackend.New(cfg, log, now)
}

// renewable is a gRPC backend a reload can renew over its connection.
type renewable interface {
	Carries(grpcbackend.Config) bool
	Renew(*slog.Logger, func() time.Time) (*grpcbackend.Backend, error)
}

// upstreams is a target made of upstreams whose health it reports one by one, under the
// names of their backends (the MCP bridge: "mcp/<name>").
type upstreams interface {
	UpstreamHealth() map[string]error
}

// Health reports each of tb's targets by name — nil when it can serve, else why not: a
// gRPC backend under its name, each MCP upstream as "mcp/<name>"
// (mcpbackend.BackendPrefix, the name its breaker has), any other target that reports
// readiness under its name. Targets that report nothing (the demo) are not listed.
func (tb *Table) Health(ctx context.Context) map[string]error {
	out := make(map[string]error)
	for _, t := range tb.Targets() {
		if u, ok := t.(upstreams); ok {
			maps.Copy(out, u.UpstreamHealth())
			continue
		}
		if r, ok := t.(gateway.Readier); ok {
			out[t.Name()] = r.Ready(ctx)
		}
	}
	return out
}

// readyPoll is how often AwaitReady checks whether the new table's targets are ready.
const readyPoll = 10 * time.Millisecond

// AwaitReady waits, up to timeout, until every target that can serve in prev can serve in
// next too. A target down in prev as well, or new in next, is not waited for: the swap
// does not make it worse. It returns an error naming each target still not ready; setting
// names the configuration key of timeout in that error.
func AwaitReady(ctx context.Context, next, prev *Table, timeout time.Duration, setting string) error {
	var want []string
	for name, err := range prev.Health(ctx) {
		if err == nil {
			want = append(want, name)
		}
	}
	slices.Sort(want)
	deadline := time.Now().Add(timeout)
	for {
		h := next.Health(ctx)
		var missing []string
		for _, name := range want {
			if err, ok := h[name]; ok && err != nil {
				missing = append(missing, fmt.Sprintf("%s (%v)", name, err))
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("targets not ready within %s (%s), though ready in the configuration serving: %s",
				setting, timeout, strings.Join(missing, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(readyPoll):
		}
	}
}
