package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/gatehouse-dev/gatehouse/auth/tlsconf"
)

// ALPN protocols of the listeners, in order of preference: HTTP/2 first where the listener
// speaks it, HTTP/1.1 for the WebSocket clients and those without HTTP/2.
var (
	httpProtos = []string{"h2", "http/1.1"}
	grpcProtos = []string{"h2"}
)

// listenersTLS are the TLS sources of the listeners with a tls section (nil for those
// without), opened at start: the files' content is re-read while they serve, the sections
// themselves take effect on restart like every listener setting.
type listenersTLS struct {
	boundary, admin, internal *tlsconf.Source
}

// openListenersTLS reads the certificate files of every listener's tls section.
func openListenersTLS(cfg ServerConfig, log *slog.Logger) (listenersTLS, error) {
	var out listenersTLS
	open := func(c *tlsconf.Config, name string, protos []string) (*tlsconf.Source, error) {
		if c == nil {
			return nil, nil
		}
		src, err := tlsconf.Open(*c, tlsconf.Options{Listener: name, NextProtos: protos, Log: log})
		if err != nil {
			return nil, fmt.Errorf("%s listener: %w", name, err)
		}
		return src, nil
	}
	var errs [3]error
	out.boundary, errs[0] = open(cfg.Boundary.TLS, "boundary", httpProtos)
	out.admin, errs[1] = open(cfg.Admin.TLS, "admin", httpProtos)
	if cfg.Internal != nil {
		out.internal, errs[2] = open(cfg.Internal.TLS, "internal", grpcProtos)
	}
	return out, errors.Join(errs[:]...)
}

// serverConfig returns the TLS configuration of src, nil when the listener is plaintext.
func serverConfig(src *tlsconf.Source) *tls.Config {
	if src == nil {
		return nil
	}
	return src.ServerConfig()
}

// peerTLS returns the TLS configuration to dial other replicas' internal listener with,
// nil when it is plaintext.
func peerTLS(src *tlsconf.Source) *tls.Config {
	if src == nil {
		return nil
	}
	return src.PeerClientConfig()
}

// boundaryProtocols returns the protocols the boundary serves: HTTP/1.1, and HTTP/2 over
// TLS (by ALPN) or, with h2c, in plaintext.
func boundaryProtocols(b BoundaryConfig) *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(b.H2C)
	return p
}

// serveListener serves srv on ln, over TLS when srv has a TLS configuration.
func serveListener(srv *http.Server, ln net.Listener) error {
	if srv.TLSConfig == nil {
		return serveHTTP(srv, ln)
	}
	if err := srv.ServeTLS(ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// scheme is the URL scheme of a listener served with src.
func scheme(src *tlsconf.Source) string {
	if src == nil {
		return "http"
	}
	return "https"
}
