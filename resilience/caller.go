package resilience

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

type clientAddrKey struct{}

// WithClientAddr returns ctx carrying the network address of the caller, as the face saw
// it. It is how anonymous callers are told apart by the rate-limit and idempotency stages
// (see callerIdentity); a face that does not set it leaves every anonymous caller of its
// calls one identity.
func WithClientAddr(ctx context.Context, addr netip.Addr) context.Context {
	if !addr.IsValid() {
		return ctx
	}
	return context.WithValue(ctx, clientAddrKey{}, addr)
}

// clientAddr returns the address WithClientAddr put in ctx.
func clientAddr(ctx context.Context) (netip.Addr, bool) {
	a, ok := ctx.Value(clientAddrKey{}).(netip.Addr)
	return a, ok
}

// ipv6Partition is the prefix length one IPv6 client is counted by: a host usually holds a
// whole /64 and could otherwise take a fresh address per call.
const ipv6Partition = 64

// callerIdentity names whose buckets and idempotency records a call uses:
//
//   - an authenticated caller by its subject ("s:" + Principal.Subject: a JWT's sub, an API
//     key's name);
//   - an anonymous caller by its address when the face passed one (WithClientAddr): the
//     IPv4 address, or the IPv6 /64 it belongs to ("a:" + address);
//   - any other anonymous caller as the one subject "anonymous", shared.
//
// Subjects of different issuers, and an API key named as a JWT subject, are one identity:
// name them apart where that matters.
func callerIdentity(ctx context.Context, p gateway.Principal) string {
	kind, id := callerParts(ctx, p)
	return kind + id
}

// callerParts returns callerIdentity in its two parts, the kind ("s:" or "a:") and the
// name.
func callerParts(ctx context.Context, p gateway.Principal) (kind, id string) {
	if p.Anonymous {
		if a, ok := clientAddr(ctx); ok {
			a = a.Unmap()
			if a.Is6() {
				return "a:", netip.PrefixFrom(a, ipv6Partition).Masked().String()
			}
			return "a:", a.String()
		}
	}
	return "s:", p.Subject
}

// maxRawIdentity is the longest identity written into a state key as it is; longer ones
// (a JWT subject may be long) are written as their SHA-256.
const maxRawIdentity = 256

// appendIdentityKey appends the caller's identity as a state key component: "=" + the
// identity when short, else "#" + its hex SHA-256, so the two forms never collide and a
// key stays bounded.
func appendIdentityKey(b []byte, ctx context.Context, p gateway.Principal) []byte {
	kind, id := callerParts(ctx, p)
	if len(kind)+len(id) <= maxRawIdentity {
		return append(append(append(b, '='), kind...), id...)
	}
	h := sha256.New()
	_, _ = h.Write([]byte(kind))
	_, _ = h.Write([]byte(id))
	return hex.AppendEncode(append(b, '#'), h.Sum(nil))
}
