package server

import (
	"fmt"
	"net"
)

// bindDemo binds the demo gRPC backend (server.demo_grpc) on a free port of its configured
// host and points every gRPC route of cfg whose address is the configured one at that port.
// With always false it binds nothing (nil, nil) unless such a route exists: ServeStdio runs
// beside a gateway that may already serve the configured port. serve binds this way when
// the configured port is 0, so several replicas on one host never fight over it.
func bindDemo(cfg *Config, always bool) (net.Listener, error) {
	demo := cfg.Server.DemoGRPC
	if demo == nil {
		return nil, nil
	}
	if !always && !routesAt(cfg, demo.Addr) {
		return nil, nil
	}
	host, _, err := net.SplitHostPort(demo.Addr)
	if err != nil {
		return nil, fmt.Errorf("server.demo_grpc.addr: %w", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("demo gRPC backend listener: %w", err)
	}
	pointDemoRoutes(cfg, demo.Addr, ln.Addr().String())
	return ln, nil
}

// demoOnFreePort reports whether the demo gRPC backend is configured on port 0.
func demoOnFreePort(cfg *Config) bool {
	demo := cfg.Server.DemoGRPC
	if demo == nil {
		return false
	}
	_, port, err := net.SplitHostPort(demo.Addr)
	return err == nil && port == "0"
}

// routesAt reports whether a gRPC route of cfg has the address addr.
func routesAt(cfg *Config, addr string) bool {
	for _, b := range cfg.Routing.GRPC {
		if b.Address == addr {
			return true
		}
	}
	return false
}

// pointDemoRoutes points the gRPC routes of cfg at address from to address to.
func pointDemoRoutes(cfg *Config, from, to string) {
	for i := range cfg.Routing.GRPC {
		if cfg.Routing.GRPC[i].Address == from {
			cfg.Routing.GRPC[i].Address = to
		}
	}
}
