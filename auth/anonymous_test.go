package auth_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func TestAuthenticate(t *testing.T) {
	loopback := netip.MustParseAddrPort("127.0.0.1:5000")
	loopback6 := netip.MustParseAddrPort("[::1]:5000")
	mapped := netip.MustParseAddrPort("[::ffff:127.0.0.1]:5000")
	remote := netip.MustParseAddrPort("203.0.113.7:5000")
	off := false
	tests := []struct {
		name  string
		cfg   auth.Config
		creds gateway.Credentials
		ok    bool
		tier  string
	}{
		{"nothing configured refuses", auth.Config{}, gateway.Credentials{Remote: loopback}, false, ""},
		{"anonymous from loopback", auth.Config{Anonymous: &auth.AnonymousConfig{}}, gateway.Credentials{Remote: loopback}, true, "standard"},
		{"anonymous from ipv6 loopback", auth.Config{Anonymous: &auth.AnonymousConfig{}}, gateway.Credentials{Remote: loopback6}, true, "standard"},
		{"anonymous from v4-mapped loopback", auth.Config{Anonymous: &auth.AnonymousConfig{}}, gateway.Credentials{Remote: mapped}, true, "standard"},
		{"anonymous from remote refused", auth.Config{Anonymous: &auth.AnonymousConfig{}}, gateway.Credentials{Remote: remote}, false, ""},
		{"anonymous from remote when allowed", auth.Config{Anonymous: &auth.AnonymousConfig{LoopbackOnly: &off, Tier: "enterprise"}}, gateway.Credentials{Remote: remote}, true, "enterprise"},
		{"unverifiable bearer refused", auth.Config{Anonymous: &auth.AnonymousConfig{}}, gateway.Credentials{Remote: loopback, Bearer: "x"}, false, ""},
		{"unverifiable api key refused", auth.Config{Anonymous: &auth.AnonymousConfig{}}, gateway.Credentials{Remote: loopback, APIKey: "x"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := auth.New(tt.cfg).Authenticate(context.Background(), tt.creds)
			if !tt.ok {
				if ge := gateway.AsError(err); ge == nil || ge.Code() != schemas.CodeAuthentication {
					t.Fatalf("got %+v, %v; want AUTHENTICATION_FAILED", p, err)
				}
				return
			}
			if err != nil || !p.Anonymous || p.Tier != tt.tier {
				t.Fatalf("got %+v, %v; want anonymous of tier %q", p, err, tt.tier)
			}
		})
	}
}
