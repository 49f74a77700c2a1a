package httprpc

import (
	"log/slog"

	"github.com/gatehouse-dev/gatehouse/faces"
)

// Gateway is what the face sees of the gateway.
type Gateway interface {
	// Acquire returns the configuration in force, held until its Release.
	Acquire() Runtime
	// JWKS returns the JSON Web Key Set of the keys the gateway signs with.
	JWKS() []byte
}

// Runtime is one configuration as this face sees it.
type Runtime interface {
	faces.Runtime
	// HTTP returns the face's settings in this configuration.
	HTTP() Settings
	// AgentCard returns the provider of the NEKTE agent card, nil when NEKTE is off.
	AgentCard() CardProvider
	// OpenRPC returns the provider of the OpenRPC document, nil when there is none.
	OpenRPC() OpenRPCProvider
}

// CardProvider writes the NEKTE agent card, JSON, for the endpoint a request was addressed
// to (routing/nekte). A provider configured with an endpoint of its own (behind a proxy
// that terminates TLS or rewrites paths) announces that one instead.
type CardProvider interface {
	AgentCard(endpoint string) ([]byte, error)
}

// Face is the JSON-RPC face over HTTP.
type Face struct {
	gw  Gateway
	log *slog.Logger
}

// New returns the face serving gw's configurations; log receives what fails outside a call.
func New(gw Gateway, log *slog.Logger) *Face {
	return &Face{gw: gw, log: log}
}
