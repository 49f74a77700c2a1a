package sessionrpc

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// BuildOptions are what the targets of the session routes need beyond their
// configuration.
type BuildOptions struct {
	// Logger receives the targets' logs; nil discards them.
	Logger *slog.Logger
	// TLS is the client TLS configuration of wss:// and https:// upstreams (nil: the
	// system roots).
	TLS *tls.Config
	// Previous are the targets of the configuration serving, on a reload (nil at start):
	// upstream commands that did not change are shared, not started again.
	Previous []gateway.Target
	// Lookup finds the target of a routed method: the inner target of a gRPC route
	// (GRPCConfig.Method).
	Lookup func(method string) (gateway.Target, bool)
}

// Build returns the targets of routes by method (Method: "session.<name>"): an Upstream
// per upstream route, a GRPCStream over the routed method of each gRPC route. A
// capability route needs none (its method is routed already). On an error, what was
// built is closed.
func Build(routes []RouteConfig, opts BuildOptions) (map[string]gateway.Target, error) {
	out := make(map[string]gateway.Target)
	for _, r := range routes {
		var t gateway.Target
		var err error
		switch {
		case r.Upstream != nil:
			t, err = NewUpstream(r.Name, *r.Upstream, UpstreamOptions{Logger: opts.Logger, TLS: opts.TLS, Previous: opts.Previous})
		case r.GRPC != nil:
			inner, ok := lookup(opts, r.GRPC.Method)
			if !ok {
				err = fmt.Errorf("session route %s: grpc.method %q is not routed (routing.grpc)", r.Name, r.GRPC.Method)
				break
			}
			t, err = NewGRPCStream(r.Name, *r.GRPC, inner)
		default:
			continue
		}
		if err != nil {
			return nil, errors.Join(err, closeAll(out))
		}
		out[r.Method()] = t
	}
	return out, nil
}

func lookup(opts BuildOptions, method string) (gateway.Target, bool) {
	if opts.Lookup == nil {
		return nil, false
	}
	return opts.Lookup(method)
}

// closeAll closes every target of ts that holds resources.
func closeAll(ts map[string]gateway.Target) error {
	var errs []error
	for m, t := range ts {
		if c, ok := t.(gateway.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", m, err))
			}
		}
	}
	return errors.Join(errs...)
}
