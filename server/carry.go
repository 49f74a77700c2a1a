package server

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// What a reload carries over from the runtime serving to the one it builds, when the
// configuration of it did not change:
//
//   - an MCP upstream: shared by both bridges (mcpbackend.CarryOver) — same child process,
//     same sessions, same catalog; it stops when the last bridge holding it closes;
//   - a gRPC backend: renewed over the same connection (grpcbackend.Backend.Renew), its
//     descriptors loaded anew, since a .proto file or the backend's reflection may have
//     changed; the connection closes with the last backend holding it;
//   - the circuit breakers, when the breakers section is unchanged: their state is kept.
//
// The new runtime takes traffic once every target that can serve in the old one can serve
// in it too (awaitReady), so calls never meet a target still starting.

// mcpTarget returns rt's MCP target; nil for a nil rt or a configuration without one.
func (rt *runtime) mcpTarget() *mcpbackend.Target {
	if rt == nil {
		return nil
	}
	return rt.table.MCP()
}

// grpcBackend is routing.BuildOptions.GRPC for a runtime built beside rt: the backend of
// cfg renewed from rt's when rt has one of the same configuration, else a new one.
func (rt *runtime) grpcBackend(cfg grpcbackend.Config, log *slog.Logger, now func() time.Time) (*grpcbackend.Backend, error) {
	if rt != nil {
		for _, t := range rt.table.Targets() {
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

// breakers returns the breakers of the pipeline being built: the replaced runtime's, with
// their state, when the breakers section did not change; else new ones.
func (p pipelineParams) breakers() *resilience.Breakers {
	if prev := p.prev; prev != nil && prev.breakers != nil && reflect.DeepEqual(p.cfg.Breakers, prev.cfg.Breakers) {
		return prev.breakers
	}
	return resilience.NewBreakers(p.cfg.Breakers)
}

// health reports each of rt's targets by name — nil when it can serve, else why not: a
// gRPC backend under its name, each MCP upstream as "mcp/<name>"
// (mcpbackend.BackendPrefix, the name its breaker has), any other target that reports
// readiness under its name. Targets that report nothing (the demo) are not listed.
func (rt *runtime) health(ctx context.Context) map[string]error {
	out := make(map[string]error)
	for _, t := range rt.table.Targets() {
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

// readyPoll is how often a reload checks whether the new runtime's targets are ready.
const readyPoll = 10 * time.Millisecond

// awaitReady waits, up to timeout, until every target that can serve in prev can serve in
// next too. A target down in prev as well, or new in next, is not waited for: the swap
// does not make it worse. It returns an error naming each target still not ready.
func awaitReady(ctx context.Context, next, prev *runtime, timeout time.Duration) error {
	var want []string
	for name, err := range prev.health(ctx) {
		if err == nil {
			want = append(want, name)
		}
	}
	slices.Sort(want)
	deadline := time.Now().Add(timeout)
	for {
		h := next.health(ctx)
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
			return fmt.Errorf("targets not ready within server.reload.ready_timeout (%s), though ready in the configuration serving: %s",
				timeout, strings.Join(missing, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(readyPoll):
		}
	}
}

// boolInt is 1 for true, 0 for false (a gauge's value).
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// settling reports whether the gateway is still starting for readiness: not every target
// h reports has been up at once yet, and less than within has passed since it started
// serving. A starting replica joins the rotation with all its targets up, or once within
// has passed; after that, server.readiness decides.
func (s *Server) settling(h map[string]error, within time.Duration) bool {
	if s.settled.Load() {
		return false
	}
	up := true
	for _, err := range h {
		up = up && err == nil
	}
	if up || time.Since(time.Unix(0, s.servingSince.Load())) >= within {
		s.settled.Store(true)
		return false
	}
	return true
}
