package grpcface

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/routing"
)

// Gateway is the gateway as the internal gRPC face sees it. It is safe for concurrent use.
type Gateway interface {
	// Acquire returns the configuration in force with a hold on it; the caller must
	// Release it. A reload swaps what Acquire returns; RPCs in flight finish on the
	// configuration they acquired.
	Acquire() Runtime
	// Draining reports whether the gateway is shutting down (health answers NOT_SERVING).
	Draining() bool
}

// Runtime is one configuration as the face's services need it: the pipeline and
// authenticator every face uses, and the routing table (the bridged MCP tools of
// tool.v1, whether NEKTE is on, the targets of health checking).
type Runtime interface {
	faces.Runtime
	// Table returns the configuration's routing table.
	Table() *routing.Table
	// Health reports each target's health and the rule by which the replica is ready,
	// the same as /readyz's.
	Health(ctx context.Context) faces.TargetHealth
}
