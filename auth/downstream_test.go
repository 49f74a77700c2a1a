package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

func TestNarrow(t *testing.T) {
	tests := []struct {
		name       string
		have, want []string
		out        []string
	}{
		{"none held", nil, []string{"a"}, nil},
		{"none required", []string{"a"}, nil, nil},
		{"intersection in the rule's order", []string{"c", "a", "b"}, []string{"b", "x", "a"}, []string{"b", "a"}},
		{"repeats collapse", []string{"a", "a"}, []string{"a", "a", "b"}, []string{"a"}},
		{"case matters", []string{"Read"}, []string{"read"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := auth.Narrow(tt.have, tt.want); !slices.Equal(got, tt.out) {
				t.Fatalf("Narrow(%q, %q) = %q, want %q", tt.have, tt.want, got, tt.out)
			}
		})
	}
}

// TestMintHopChainNeverWidens is the property Σ” ⊆ Σ' ⊆ Σ across chained hops: a caller
// with random scopes makes a chain of hops, each to a target whose rule requires random
// scopes; each hop's token is minted by the ring and verified by the next target with
// nothing but the ring's published JWKS, and the scopes the target verifies become the
// caller's scopes of the next hop. Every hop's scopes are a subset of the previous hop's
// and of its rule's, and exactly their intersection; the act claim records every hop.
func TestMintHopChainNeverWidens(t *testing.T) {
	ring := openRing(t, auth.KeyRingConfig{Issuer: "https://gatehouse.test"}, auth.KeyRingOptions{})
	defer ring.Close()
	const targets = 4
	issuers := make([]auth.IssuerConfig, 0, 1)
	issuers = append(issuers, auth.IssuerConfig{Issuer: "https://gatehouse.test", JWKSFile: writeFile(t, "jwks.json", ring.JWKS())})
	for i := range targets {
		issuers[0].Audiences = append(issuers[0].Audiences, fmt.Sprintf("svc-%d", i))
	}
	backend, err := auth.Open(context.Background(), auth.Config{JWT: &auth.JWTConfig{Issuers: issuers}}, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()

	universe := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	pick := func(rng *rand.Rand) []string {
		var out []string
		for _, s := range universe {
			if rng.IntN(2) == 0 {
				out = append(out, s)
			}
		}
		return out
	}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
		caller := gateway.Principal{Subject: "alice", Scopes: pick(rng)}
		hops := 1 + rng.IntN(targets)
		for hop := range hops {
			required := pick(rng)
			m, err := ring.MintHop(context.Background(), auth.HopRequest{
				Caller: caller, Audience: fmt.Sprintf("svc-%d", hop), Required: required, Deadline: time.Now().Add(time.Minute),
			})
			if err != nil {
				t.Fatalf("seed %d hop %d: %v", seed, hop, err)
			}
			got, err := bearer(backend, m.Token)
			if err != nil {
				t.Fatalf("seed %d hop %d: the target refused the hop token: %v", seed, hop, err)
			}
			for _, s := range got.Scopes {
				if !slices.Contains(caller.Scopes, s) || !slices.Contains(required, s) {
					t.Fatalf("seed %d hop %d: scope %q widened: caller %q, rule %q, token %q", seed, hop, s, caller.Scopes, required, got.Scopes)
				}
			}
			for _, s := range caller.Scopes {
				if slices.Contains(required, s) && !slices.Contains(got.Scopes, s) {
					t.Fatalf("seed %d hop %d: scope %q held and required, but not granted", seed, hop, s)
				}
			}
			if got.Subject != "alice" || actDepth(got.Claims) != hop+1 {
				t.Fatalf("seed %d hop %d: sub %q, act %v", seed, hop, got.Subject, got.Claims["act"])
			}
			caller = got // the target calls on, holding the hop token
		}
	}
}

// actDepth counts the nested act claims of claims.
func actDepth(claims map[string]any) int {
	n := 0
	for act, ok := claims["act"].(map[string]any); ok; act, ok = act["act"].(map[string]any) {
		if act["sub"] != "https://gatehouse.test" {
			return -1
		}
		n++
	}
	return n
}

func TestMintHopLifetime(t *testing.T) {
	var at time.Time
	ring := openRing(t, auth.KeyRingConfig{MaxTokenTTL: 10 * time.Minute}, auth.KeyRingOptions{Now: func() time.Time { return at }})
	defer ring.Close()
	at = time.Unix(1_800_000_000, 0)
	caller := gateway.Principal{Subject: "alice", Scopes: []string{"a"}}
	tests := []struct {
		name     string
		deadline time.Time
		ttl      time.Duration
		err      error
	}{
		{"no deadline: the ring's maximum", time.Time{}, 10 * time.Minute, nil},
		{"a far deadline: the ring's maximum", at.Add(time.Hour), 10 * time.Minute, nil},
		{"a near deadline bounds it", at.Add(30 * time.Second), 30 * time.Second, nil},
		{"a deadline within the second rounds down", at.Add(2500 * time.Millisecond), 2 * time.Second, nil},
		{"a passed deadline is refused", at.Add(-time.Millisecond), 0, auth.ErrHopExpired},
		{"a deadline of now is refused", at, 0, auth.ErrHopExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ring.MintHop(context.Background(), auth.HopRequest{Caller: caller, Audience: "svc", Required: []string{"a"}, Deadline: tt.deadline})
			if !errors.Is(err, tt.err) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if err == nil && m.Expires.Sub(at) != tt.ttl {
				t.Fatalf("lifetime %s, want %s", m.Expires.Sub(at), tt.ttl)
			}
		})
	}
}

func TestMintHopClaims(t *testing.T) {
	ring := openRing(t, auth.KeyRingConfig{}, auth.KeyRingOptions{})
	defer ring.Close()
	caller := gateway.Principal{Subject: "alice", Scopes: []string{"read", "write", "admin"}, Bearer: "caller-token",
		Claims: map[string]any{"act": map[string]any{"sub": "agent-7"}, "tenant": "acme"}}
	m, err := ring.MintHop(context.Background(), auth.HopRequest{Caller: caller, Audience: "notes", Required: []string{"write", "read"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ring.Verifier("notes").Verify(context.Background(), m.Token)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Claims
	act, _ := json.Marshal(c["act"])
	if c["sub"] != "alice" || c["aud"] != "notes" || c["scope"] != "write read" || c["jti"] != m.ID || m.ID == "" ||
		string(act) != `{"act":{"sub":"agent-7"},"sub":"gatehouse"}` || c["tenant"] != nil {
		t.Fatalf("claims %v (act %s)", c, act)
	}
	other, err := ring.MintHop(context.Background(), auth.HopRequest{Caller: caller, Audience: "notes", Required: []string{"read"}})
	if err != nil || other.ID == m.ID {
		t.Fatalf("a second hop reuses the jti: %q %q %v", m.ID, other.ID, err)
	}
}
