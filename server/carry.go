package server

import (
	"reflect"
	"time"

	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/routing"
)

// What a reload carries over from the runtime serving to the one it builds, when the
// configuration of it did not change: the routing table's MCP upstreams and gRPC
// connections (routing/carry.go); the circuit breakers and the admission control, when
// their section is unchanged, with their state (breakers, newAdmission). The new runtime
// takes traffic once every target that can serve in the old one can serve in it too
// (routing.AwaitReady).

// tableOrNil returns rt's routing table; nil for a nil rt (the first build, nothing to carry).
func (rt *runtime) tableOrNil() *routing.Table {
	if rt == nil {
		return nil
	}
	return rt.table
}

// breakers returns the breakers of the pipeline being built: the replaced runtime's, with
// their state, when the breakers section did not change; else new ones.
func (p pipelineParams) breakers() *resilience.Breakers {
	if prev := p.prev; prev != nil && prev.breakers != nil && reflect.DeepEqual(p.cfg.Breakers, prev.cfg.Breakers) {
		return prev.breakers
	}
	return resilience.NewBreakers(p.cfg.Breakers)
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
