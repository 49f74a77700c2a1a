package server

import (
	"net"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// bindDemo binds the demo gRPC backend (server.demo_grpc) on a free port and points the
// routes of cfg at it (demo.ListenCalculator); nil, nil without a demo_grpc section.
func bindDemo(cfg *Config, always bool) (net.Listener, error) {
	if cfg.Server.DemoGRPC == nil {
		return nil, nil //nolint:nilnil // no section, no listener
	}
	return demo.ListenCalculator(cfg.Server.DemoGRPC.Addr, cfg.Routing.GRPC, always)
}

// demoOnFreePort reports whether the demo gRPC backend is configured on port 0.
func demoOnFreePort(cfg *Config) bool {
	return cfg.Server.DemoGRPC != nil && demo.OnFreePort(cfg.Server.DemoGRPC.Addr)
}
