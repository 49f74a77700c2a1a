package mcpface

import (
	"time"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing"
)

// Gateway is the gateway as the MCP face sees it. The face lives as long as the process;
// each request takes the configuration in force (Acquire) and releases it when done.
type Gateway interface {
	// Acquire returns the configuration in force with a hold on it; the caller releases it.
	Acquire() Runtime
	// Draining reports whether the gateway is shutting down: no event stream opens then.
	Draining() bool
}

// Runtime is one configuration as the MCP face sees it.
type Runtime interface {
	faces.Runtime
	// Table returns the configuration's routing table; the face publishes the catalog of
	// its MCP bridge (the mcpbackend.Target among its targets).
	Table() *routing.Table
	// Visibility returns what callers see in the configuration's catalogs.
	Visibility() Visibility
	// WriteTimeout bounds each write of a response (server.boundary.write_timeout).
	WriteTimeout() time.Duration
	// Issuers returns the issuers whose tokens the configuration accepts.
	Issuers() []string
	// Scopes returns the scopes the configuration's policy requires, sorted and each once.
	Scopes() []string
}

// Visibility decides which entries of its lists the face shows a caller: those the policy
// would let it reach. Listing decides nothing; a call still goes through the policy.
type Visibility interface {
	// Filters reports whether anything is hidden from anyone; false, the lists are not
	// filtered.
	Filters() bool
	// ShowsCall reports whether the caller (principal, zone, protocol) would be let through
	// to call; it may set call.Target.
	ShowsCall(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol, call *gateway.Call) bool
}
