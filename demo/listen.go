package demo

import (
	"fmt"
	"net"

	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
)

// ListenCalculator binds the demo gRPC backend configured at addr (server.demo_grpc) on a
// free port of addr's host, and points every gRPC route of routes whose address is addr at
// that port. With always false it binds nothing (nil, nil) unless such a route exists: a
// gateway over stdio runs beside a gateway that may already serve the configured port. A
// gateway binds this way when the configured port is 0 (OnFreePort), so several replicas
// on one host never fight over it.
func ListenCalculator(addr string, routes []grpcbackend.Config, always bool) (net.Listener, error) {
	if !always && !routesAt(routes, addr) {
		return nil, nil //nolint:nilnil // nothing to serve: no listener and no error
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("server.demo_grpc.addr: %w", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("demo gRPC backend listener: %w", err)
	}
	PointRoutes(routes, addr, ln.Addr().String())
	return ln, nil
}

// OnFreePort reports whether the demo gRPC backend's configured address has port 0.
func OnFreePort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && port == "0"
}

// routesAt reports whether a route of routes has the address addr.
func routesAt(routes []grpcbackend.Config, addr string) bool {
	for _, b := range routes {
		if b.Address == addr {
			return true
		}
	}
	return false
}

// PointRoutes points the routes of routes at address from to address to.
func PointRoutes(routes []grpcbackend.Config, from, to string) {
	for i := range routes {
		if routes[i].Address == from {
			routes[i].Address = to
		}
	}
}
