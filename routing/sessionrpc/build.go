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
}

// Build returns the targets of routes by method (Method: "session.<name>"): an Upstream
// per upstream route. A capability route needs none (its method is routed already). On
// an error, what was built is closed.
func Build(routes []RouteConfig, opts BuildOptions) (map[string]gateway.Target, error) {
	out := make(map[string]gateway.Target)
	for _, r := range routes {
		if r.Upstream == nil {
			continue
		}
		u, err := NewUpstream(r.Name, *r.Upstream, UpstreamOptions{Logger: opts.Logger, TLS: opts.TLS, Previous: opts.Previous})
		if err != nil {
			return nil, errors.Join(err, closeAll(out))
		}
		out[r.Method()] = u
	}
	return out, nil
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
