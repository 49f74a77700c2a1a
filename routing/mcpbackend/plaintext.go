package mcpbackend

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// checkPlaintextHop refuses an HTTP upstream that would receive a hop credential in the
// clear: a downstream_token mode that sends one (mint, the default, or passthrough), a
// plain http:// URL, and a host that is not loopback (127.0.0.0/8, ::1, localhost),
// unless the transport sets allow_plaintext_hop_token. A token read on the path is a
// bearer credential for its whole lifetime, so the configuration is refused rather than
// the token silently withheld (which would turn into confusing 401s upstream).
func (c Config) checkPlaintextHop(h *HTTPConfig) error {
	if h.AllowPlaintextHopToken {
		return nil
	}
	if mode, _ := gateway.ParseHopMode(c.DownstreamToken.Mode); mode == gateway.HopNone {
		return nil
	}
	u, err := url.Parse(h.URL)
	if err != nil || !strings.HasPrefix(strings.ToLower(h.URL), "http://") || isLoopback(u.Hostname()) {
		return nil //nolint:nilerr // checkURL has refused a URL that does not parse
	}
	mode := c.DownstreamToken.Mode
	if mode == "" {
		mode = "mint"
	}
	return fmt.Errorf("%s.url %s is plain http to a host that is not loopback, and downstream_token.mode %s would send a hop token over it in the clear: "+
		"use https://, set downstream_token.mode: none, or set %s.allow_plaintext_hop_token: true if the network path is trusted",
		c.transportName(), u.Redacted(), mode, c.transportName())
}

// isLoopback reports whether host is localhost or a loopback address. Other names are
// not resolved: a name that resolves to loopback today may not tomorrow.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
