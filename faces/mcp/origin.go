package mcpface

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/gatehouse-dev/gatehouse/faces"
)

// foreignOrigin names what betrays a DNS-rebinding attempt in a request that reached a
// loopback address — "Host" or "Origin" when it is not a loopback name — and returns ""
// otherwise. Requests without an Origin (non-browser clients) pass on their Host alone.
func foreignOrigin(r *http.Request) string {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || !isLoopbackName(local.String()) {
		return ""
	}
	if !isLoopbackName(r.Host) {
		return "Host"
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !isLoopbackName(u.Host) {
			return "Origin"
		}
	}
	return ""
}

// isLoopbackName reports whether a host or host:port names the loopback interface:
// localhost, 127.0.0.0/8 or ::1.
func isLoopbackName(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// resourceMetadata returns the URL of the OAuth protected-resource metadata of /mcp as the
// request addressed the boundary.
func resourceMetadata(r *http.Request) string {
	return faces.RequestOrigin(r) + ProtectedResourcePath + Path
}
