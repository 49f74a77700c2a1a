package faces

// TargetHealth is what one configuration's targets can serve: the rule by which a replica
// is ready, shared by the admin face's /readyz and the gRPC face's health service.
type TargetHealth struct {
	// Targets is each target's health by name (a gRPC backend, an MCP upstream as
	// "mcp/<name>"): nil when it can serve, else why not. Targets that report no health
	// (the demo) are not listed.
	Targets map[string]error
	// All makes the replica ready only while every target can serve: server.readiness
	// "all", or while the gateway starts (until every target has been up once, within a
	// bound); otherwise it is ready while at least one can, or there is none ("any").
	All bool
	// Info are informational members of /readyz's body, by name (the agent link's
	// "agents"); they never change readiness.
	Info map[string]any
}

// Ready reports whether the targets let the replica serve under h's rule, and how many
// are down.
func (h TargetHealth) Ready() (ok bool, down int) {
	for _, err := range h.Targets {
		if err != nil {
			down++
		}
	}
	if h.All {
		return down == 0, down
	}
	return down == 0 || down < len(h.Targets), down
}
