package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

func TestDownstreamTokenConfig(t *testing.T) {
	tests := []struct {
		name string
		d    gateway.DownstreamTokenConfig
		want string // "" for valid
		hop  gateway.HopAuth
	}{
		{"absent: mint for the backend's name", gateway.DownstreamTokenConfig{}, "", gateway.HopAuth{Mode: gateway.HopMint, Audience: "billing"}},
		{"mint", gateway.DownstreamTokenConfig{Mode: "mint"}, "", gateway.HopAuth{Mode: gateway.HopMint, Audience: "billing"}},
		{"mint with audience", gateway.DownstreamTokenConfig{Mode: "mint", Audience: "https://billing.internal"}, "", gateway.HopAuth{Mode: gateway.HopMint, Audience: "https://billing.internal"}},
		{"audience alone means mint", gateway.DownstreamTokenConfig{Audience: "billing-v2"}, "", gateway.HopAuth{Mode: gateway.HopMint, Audience: "billing-v2"}},
		{"passthrough", gateway.DownstreamTokenConfig{Mode: "passthrough"}, "", gateway.HopAuth{Mode: gateway.HopPassthrough}},
		{"none", gateway.DownstreamTokenConfig{Mode: "none"}, "", gateway.HopAuth{Mode: gateway.HopNone}},
		{"unknown mode", gateway.DownstreamTokenConfig{Mode: "forward"}, `downstream_token.mode: "forward" is not one of mint, passthrough, none`, gateway.HopAuth{}},
		{"mode is case-sensitive", gateway.DownstreamTokenConfig{Mode: "Mint"}, `downstream_token.mode: "Mint"`, gateway.HopAuth{}},
		{"audience with passthrough", gateway.DownstreamTokenConfig{Mode: "passthrough", Audience: "x"}, "downstream_token.audience is set but mode is passthrough", gateway.HopAuth{}},
		{"audience with none", gateway.DownstreamTokenConfig{Mode: "none", Audience: "x"}, "downstream_token.audience is set but mode is none", gateway.HopAuth{}},
		{"audience with a space", gateway.DownstreamTokenConfig{Audience: "billing api"}, "downstream_token.audience must be", gateway.HopAuth{}},
		{"audience with a control character", gateway.DownstreamTokenConfig{Audience: "billing\n"}, "downstream_token.audience must be", gateway.HopAuth{}},
		{"audience of 256 bytes", gateway.DownstreamTokenConfig{Audience: strings.Repeat("a", 256)}, "", gateway.HopAuth{Mode: gateway.HopMint, Audience: strings.Repeat("a", 256)}},
		{"audience of 257 bytes", gateway.DownstreamTokenConfig{Audience: strings.Repeat("a", 257)}, "downstream_token.audience must be", gateway.HopAuth{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.d.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			case tt.want == "":
				if got := tt.d.HopAuth("billing"); got != tt.hop {
					t.Fatalf("HopAuth = %+v, want %+v", got, tt.hop)
				}
			}
		})
	}
}

func TestHopToken(t *testing.T) {
	ctx := context.Background()
	if gateway.HopToken(ctx) != "" {
		t.Fatal("a bare context carries a hop token")
	}
	outer := gateway.WithHopToken(ctx, "outer")
	if gateway.HopToken(outer) != "outer" || gateway.HopToken(gateway.WithHopToken(outer, "")) != "" {
		t.Fatal("a nested dispatch must replace, and be able to clear, its parent's hop token")
	}
	for _, s := range []string{"mint", "passthrough", "none"} {
		if m, ok := gateway.ParseHopMode(s); !ok || m.String() != s {
			t.Fatalf("ParseHopMode(%q) = %v, %v", s, m, ok)
		}
	}
}
