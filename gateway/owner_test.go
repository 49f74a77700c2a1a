package gateway_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

func TestPrincipalOwner(t *testing.T) {
	token := func(iss, sub string) gateway.Principal {
		return gateway.Principal{Subject: sub, Claims: map[string]any{"iss": iss, "sub": sub}}
	}
	tests := []struct {
		name string
		p    gateway.Principal
		want string
	}{
		{"API key: its name", gateway.Principal{Subject: "ops"}, "ops"},
		{"anonymous", gateway.Principal{Subject: "anonymous", Anonymous: true}, "anonymous"},
		{"token: quoted issuer and subject", token("https://idp.example/", "alice"), `"https://idp.example/" alice`},
		{"token without iss", gateway.Principal{Subject: "alice", Claims: map[string]any{}}, `"" alice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Owner(); got != tt.want {
				t.Fatalf("Owner() = %q, want %q", got, tt.want)
			}
		})
	}
	// Distinct callers never share an owner, whatever their subject holds.
	distinct := []gateway.Principal{
		{Subject: "alice"},
		token("a", "alice"),
		token("b", "alice"),
		token(`a" alice`, ""),
		token("a", `" alice`),
		token(`a "b"`, "alice"),
		token("a", `"b" alice`),
		token("", `"a" alice`),
	}
	seen := map[string]int{}
	for i, p := range distinct {
		if j, ok := seen[p.Owner()]; ok {
			t.Fatalf("callers %d and %d share the owner %q", j, i, p.Owner())
		}
		seen[p.Owner()] = i
	}
}
