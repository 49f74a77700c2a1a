package grpcface

import (
	"github.com/gatehouse-dev/gatehouse/routing/nekte"
)

// Config is the internal gRPC listener (server.internal): gatehouse.v1.GatewayService (any
// routed method, for internal callers), nekte.v1.Nekte (the NEKTE primitives, answering
// UNIMPLEMENTED while no target serves nekte.*), tool.v1.ToolService (the bridged MCP
// tools), lf.a2a.v1.A2AService (the A2A gRPC binding, while the configuration has an
// a2a section with a2a.grpc on), gatehouse.v1.PeerService (replicas fetching each other's persist: false NEKTE
// context envelopes, when NEKTE is on and the state store is shared), gRPC health
// checking per backend and server reflection.
type Config struct {
	Addr string `yaml:"addr" json:"addr,omitempty"`
	// MaxRecvBytes bounds one received message (default 4 MiB), and each message of the
	// calls this replica makes to the others' PeerService.
	MaxRecvBytes int `yaml:"max_recv_bytes" json:"max_recv_bytes,omitempty"`
	// Advertise is the host:port other replicas dial to reach this one's PeerService.
	// Empty: the address the listener is bound to, unless that is an unspecified IP
	// (0.0.0.0, ::): then persist: false envelopes stored here stay local.
	Advertise string `yaml:"advertise" json:"advertise,omitempty"`
}

// Defaults of the internal listener.
const (
	DefaultAddr      = "127.0.0.1:50051"
	DefaultRecvBytes = 4 << 20
)

// WithDefaults returns c with every zero setting at its default.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.MaxRecvBytes == 0 {
		c.MaxRecvBytes = DefaultRecvBytes
	}
	return c
}

// ValidateAdvertise checks server.internal.advertise (empty is valid: it defaults to the
// bound address).
func ValidateAdvertise(addr string) error {
	if addr == "" {
		return nil
	}
	return nekte.ValidateAdvertise(addr)
}
