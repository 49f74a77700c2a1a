package a2aface

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// ErrPushURL is the error of a webhook URL or address the push allowlist refuses; every
// refusal wraps it.
var ErrPushURL = errors.New("a2a: push notification URL refused")

// guard is the push allowlist of one configuration: which URLs a webhook may have, and —
// checked again on the resolved address when the connection is dialled, so that a name
// resolving (or re-resolving) to a private address is refused — which addresses it may
// reach.
type guard struct {
	hosts     []string       // exact host names, or ".suffix" for "*.suffix"
	cidrs     []netip.Prefix // addresses allowed even when special
	allowHTTP bool
}

func newGuard(c *PushConfig) (*guard, error) {
	g := &guard{allowHTTP: c.AllowHTTP}
	for _, h := range c.AllowedHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		switch {
		case strings.HasPrefix(h, "*.") && len(h) > 2:
			g.hosts = append(g.hosts, h[1:])
		case h != "" && !strings.ContainsAny(h, "*/:@"):
			g.hosts = append(g.hosts, h)
		default:
			return nil, fmt.Errorf("a2a.push.allowed_hosts: %q is not a host name or *.domain", h)
		}
	}
	for _, s := range c.AllowedCIDRs {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("a2a.push.allowed_cidrs: %w", err)
		}
		g.cidrs = append(g.cidrs, p.Masked())
	}
	return g, nil
}

// checkURL checks a webhook URL before it is stored: absolute, https (or http with
// allow_http), no user info, a host that is a name or a canonical IP literal, among
// allowed_hosts when that is set; an IP literal must pass checkIP.
func (g *guard) checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("%w: not an absolute URL", ErrPushURL)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !g.allowHTTP {
			return nil, fmt.Errorf("%w: http is not allowed (a2a.push.allow_http)", ErrPushURL)
		}
	default:
		return nil, fmt.Errorf("%w: scheme %q", ErrPushURL, u.Scheme)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: user info in the URL", ErrPushURL)
	}
	host := strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" && (len(p) > 5 || strings.TrimLeft(p, "0123456789") != "") {
		return nil, fmt.Errorf("%w: port %q", ErrPushURL, p)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return nil, fmt.Errorf("%w: zoned address", ErrPushURL)
		}
		if err := g.checkIP(ip); err != nil {
			return nil, err
		}
	} else if looksNumeric(host) {
		// 2130706433, 0x7f.1, 017700000001, 127.1: forms some resolvers read as
		// addresses, never names.
		return nil, fmt.Errorf("%w: %q is not a canonical IP address", ErrPushURL, host)
	}
	if len(g.hosts) > 0 && !g.hostAllowed(host) {
		return nil, fmt.Errorf("%w: host %q is not in a2a.push.allowed_hosts", ErrPushURL, host)
	}
	return u, nil
}

func (g *guard) hostAllowed(host string) bool {
	host = strings.TrimSuffix(host, ".")
	for _, h := range g.hosts {
		if h == host || (h[0] == '.' && strings.HasSuffix(host, h)) {
			return true
		}
	}
	return false
}

// looksNumeric reports whether a host that is not an IP literal is made of digits, dots
// and hex — the legacy inet_aton forms — so that no resolver reads it as an address.
func looksNumeric(host string) bool {
	last := host
	if i := strings.LastIndexByte(strings.TrimSuffix(host, "."), '.'); i >= 0 {
		last = strings.TrimSuffix(host, ".")[i+1:]
	}
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		last = last[2:]
		return strings.Trim(last, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == "" // a TLD is never all digits
}

const classDocumentation = "documentation"

// Special address classes, refused unless allowed_cidrs covers the address.
var specialPrefixes = []struct {
	class string
	p     netip.Prefix
}{
	{"this-network", netip.MustParsePrefix("0.0.0.0/8")},
	{"shared (CGNAT)", netip.MustParsePrefix("100.64.0.0/10")},
	{"IETF protocol assignments", netip.MustParsePrefix("192.0.0.0/24")},
	{classDocumentation, netip.MustParsePrefix("192.0.2.0/24")},
	{"benchmarking", netip.MustParsePrefix("198.18.0.0/15")},
	{classDocumentation, netip.MustParsePrefix("198.51.100.0/24")},
	{classDocumentation, netip.MustParsePrefix("203.0.113.0/24")},
	{"reserved", netip.MustParsePrefix("240.0.0.0/4")},
	{"NAT64", netip.MustParsePrefix("64:ff9b::/96")},
	{"NAT64", netip.MustParsePrefix("64:ff9b:1::/48")},
	{"6to4", netip.MustParsePrefix("2002::/16")},
	{"Teredo", netip.MustParsePrefix("2001::/32")},
	{classDocumentation, netip.MustParsePrefix("2001:db8::/32")},
	{"site-local", netip.MustParsePrefix("fec0::/10")},
	{"discard", netip.MustParsePrefix("100::/64")},
}

// classOf returns the special class of ip, "" for a public unicast address.
func classOf(ip netip.Addr) string {
	switch {
	case ip.Is4In6():
		return "IPv4-mapped"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	case ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	}
	for _, s := range specialPrefixes {
		if s.p.Contains(ip) {
			return s.class
		}
	}
	return ""
}

// checkIP refuses an address of a special class (loopback, private, link-local,
// multicast, unspecified, IPv4-mapped IPv6 and the other special-purpose ranges) unless
// allowed_cidrs covers it — an IPv4-mapped address by its IPv4 form.
func (g *guard) checkIP(ip netip.Addr) error {
	class := classOf(ip)
	if class == "" {
		return nil
	}
	for _, p := range g.cidrs {
		if p.Contains(ip) || (ip.Is4In6() && p.Contains(ip.Unmap())) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s address %s (allow it in a2a.push.allowed_cidrs)", ErrPushURL, class, ip)
}

// control is the dialer's Control function: it sees the address actually dialled, after
// name resolution, and refuses what checkIP refuses.
func (g *guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: dialled address %q", ErrPushURL, address)
	}
	return g.checkIP(ap.Addr())
}

// guardKey carries a delivery's guard to the transport's dialer.
type guardKey struct{}

// dialGuarded dials with the guard of ctx as the dialer's Control function: a connection
// is refused before it is made when the resolved address is not allowed.
func dialGuarded(timeout func() net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		g, _ := ctx.Value(guardKey{}).(*guard)
		if g == nil {
			return nil, fmt.Errorf("%w: no allowlist", ErrPushURL)
		}
		d := timeout()
		d.Control = g.control
		return d.DialContext(ctx, network, addr)
	}
}
