package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/state"
)

// kidOf returns the kid of a token's header.
func kidOf(t *testing.T, tok string) string {
	t.Helper()
	var h struct {
		KID string `json:"kid"`
	}
	if err := json.Unmarshal(must(base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])), &h); err != nil {
		t.Fatal(err)
	}
	return h.KID
}

// jwksKIDs returns the key ids of a JWK Set.
func jwksKIDs(t *testing.T, jwks []byte) []string {
	t.Helper()
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(jwks, &set); err != nil {
		t.Fatalf("JWKS %s: %v", jwks, err)
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k["kid"].(string))
	}
	return kids
}

func openRing(t *testing.T, cfg auth.KeyRingConfig, opts auth.KeyRingOptions) *auth.KeyRing {
	t.Helper()
	r, err := auth.OpenKeyRing(context.Background(), cfg, opts)
	if err != nil {
		t.Fatalf("OpenKeyRing: %v", err)
	}
	return r
}

func mint(t *testing.T, r *auth.KeyRing, ttl time.Duration) string {
	t.Helper()
	m, err := r.Mint(context.Background(), auth.MintRequest{Subject: "alice", Actor: "gatehouse", Audience: []string{"svc"}, Scopes: []string{"read"}, TTL: ttl})
	if err != nil {
		t.Fatalf("Mint: %v", err)
	}
	return m.Token
}

// TestKeyRingRotationOverlap follows a generated key through one rotation: published ahead,
// signing, verifying during the overlap, gone after it.
func TestKeyRingRotationOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		r := openRing(t, auth.KeyRingConfig{
			RotateEvery: time.Hour, MaxTokenTTL: 10 * time.Minute, Overlap: 11 * time.Minute, PublishAhead: 5 * time.Minute,
			SyncInterval: 30 * time.Second,
		}, auth.KeyRingOptions{})
		defer r.Close()
		v := r.Verifier("svc")
		at := func(d time.Duration) { time.Sleep(time.Until(t0.Add(d))) }

		first := mint(t, r, 10*time.Minute)
		k1 := kidOf(t, first)
		if got := jwksKIDs(t, r.JWKS()); !slices.Equal(got, []string{k1}) {
			t.Fatalf("JWKS at start: %q, want [%s]", got, k1)
		}

		at(56 * time.Minute) // K2 published (due at 55m), K1 still signs
		kids := jwksKIDs(t, r.JWKS())
		if len(kids) != 2 || kids[0] != k1 {
			t.Fatalf("JWKS before the switch: %q, want K1 and the next key", kids)
		}
		k2 := kids[1]
		old := mint(t, r, 10*time.Minute) // signed 4 minutes before the switch, expires at 66m
		if kidOf(t, old) != k1 {
			t.Fatal("the next key signed before its activation")
		}

		at(61 * time.Minute) // K2 signs; K1 verifies until 60m + overlap = 71m
		if kid := kidOf(t, mint(t, r, time.Minute)); kid != k2 {
			t.Fatalf("signing with %s after the switch, want %s", kid, k2)
		}
		if _, err := v.Verify(context.Background(), old); err != nil {
			t.Fatalf("token of the previous key during the overlap: %v", err)
		}

		at(72 * time.Minute) // past the overlap: K1 is gone
		if got := jwksKIDs(t, r.JWKS()); !slices.Equal(got, []string{k2}) {
			t.Fatalf("JWKS after the overlap: %q, want [%s]", got, k2)
		}
		if _, err := v.Verify(context.Background(), old); auth.ReasonOf(err) != auth.ReasonUnknownKey {
			t.Fatalf("token of the previous key after the overlap: %v, want unknown key", err)
		}
	})
}

// TestKeyRingJWKS checks the published keys: public halves only, typed, pinned, usable by a
// verifier that knows nothing but the JWKS.
func TestKeyRingJWKS(t *testing.T) {
	for _, alg := range []string{"EdDSA", "ES256"} {
		t.Run(alg, func(t *testing.T) {
			r := openRing(t, auth.KeyRingConfig{Algorithm: alg, Issuer: "https://gatehouse.test"}, auth.KeyRingOptions{})
			defer r.Close()
			var set struct {
				Keys []map[string]string `json:"keys"`
			}
			if err := json.Unmarshal(r.JWKS(), &set); err != nil || len(set.Keys) != 1 {
				t.Fatalf("JWKS %s: %v", r.JWKS(), err)
			}
			k := set.Keys[0]
			want := map[string]string{"EdDSA": "OKP Ed25519", "ES256": "EC P-256"}[alg]
			if k["kty"]+" "+k["crv"] != want || k["alg"] != alg || k["use"] != "sig" || k["kid"] == "" || k["x"] == "" {
				t.Fatalf("JWK %v", k)
			}
			if _, private := k["d"]; private {
				t.Fatal("the JWKS holds a private key")
			}
			tok := mint(t, r, time.Minute)
			if kidOf(t, tok) != k["kid"] {
				t.Fatal("token kid not in the JWKS")
			}
			// A backend configured with nothing but the published JWKS verifies the token.
			file := writeFile(t, "jwks.json", r.JWKS())
			a, err := auth.Open(context.Background(), auth.Config{JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{
				{Issuer: "https://gatehouse.test", Audiences: []string{"svc"}, JWKSFile: file},
			}}}, auth.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			p, err := bearer(a, tok)
			if err != nil || p.Subject != "alice" || !slices.Equal(p.Scopes, []string{"read"}) {
				t.Fatalf("verifying with the JWKS: %+v, %v", p, err)
			}
			if act, _ := p.Claims["act"].(map[string]any); act["sub"] != "gatehouse" {
				t.Fatalf("act claim %v", p.Claims["act"])
			}
		})
	}
}

func TestKeyRingMint(t *testing.T) {
	r := openRing(t, auth.KeyRingConfig{}, auth.KeyRingOptions{})
	defer r.Close()
	m, err := r.Mint(context.Background(), auth.MintRequest{
		Subject: "alice", Actor: "gatehouse", Audience: []string{"a", "b"}, Scopes: []string{"x", "y"}, TTL: 90 * time.Second,
		ID: "id-1", Claims: map[string]any{"tenant": "acme"},
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Verifier("b").Verify(context.Background(), m.Token)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Claims
	if m.ID != "id-1" || c["jti"] != "id-1" || c["iss"] != "gatehouse" || c["tenant"] != "acme" || c["scope"] != "x y" {
		t.Fatalf("claims %v", c)
	}
	exp, _ := c["exp"].(json.Number).Int64()
	iat, _ := c["iat"].(json.Number).Int64()
	if exp-iat != 90 || !m.Expires.Equal(time.Unix(exp, 0)) {
		t.Fatalf("exp %d iat %d expires %s", exp, iat, m.Expires)
	}
	if _, err := r.Verifier("c").Verify(context.Background(), m.Token); auth.ReasonOf(err) != auth.ReasonWrongAudience {
		t.Fatalf("another audience: %v", err)
	}
	random, err := r.Mint(context.Background(), auth.MintRequest{Subject: "s", Audience: []string{"a"}, TTL: time.Minute})
	if err != nil || len(random.ID) != 22 {
		t.Fatalf("random jti %q, %v", random.ID, err)
	}

	bad := []struct {
		name string
		req  auth.MintRequest
		want string
	}{
		{"no subject", auth.MintRequest{Audience: []string{"a"}, TTL: time.Minute}, "subject"},
		{"no audience", auth.MintRequest{Subject: "s", TTL: time.Minute}, "audience"},
		{"no ttl", auth.MintRequest{Subject: "s", Audience: []string{"a"}}, "ttl"},
		{"ttl beyond the maximum", auth.MintRequest{Subject: "s", Audience: []string{"a"}, TTL: time.Hour}, "ttl"},
		{"scope with a space", auth.MintRequest{Subject: "s", Audience: []string{"a"}, TTL: time.Minute, Scopes: []string{"a b"}}, "scope"},
		{"claim set by Mint", auth.MintRequest{Subject: "s", Audience: []string{"a"}, TTL: time.Minute, Claims: map[string]any{"exp": 1}}, `"exp"`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := r.Mint(context.Background(), tt.req); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error about %s", err, tt.want)
			}
		})
	}
}

func TestKeyRingSignBoundsLifetime(t *testing.T) {
	r := openRing(t, auth.KeyRingConfig{MaxTokenTTL: time.Minute, Overlap: 2 * time.Minute}, auth.KeyRingOptions{})
	defer r.Close()
	tests := []struct {
		name   string
		claims map[string]any
		ok     bool
	}{
		{"exp within the maximum", map[string]any{"sub": "s", "exp": time.Now().Add(time.Minute).Unix()}, true},
		{"exp as float64", map[string]any{"sub": "s", "exp": float64(time.Now().Add(time.Minute).Unix())}, true},
		{"exp as json.Number", map[string]any{"sub": "s", "exp": json.Number("1")}, true},
		{"no exp", map[string]any{"sub": "s"}, false},
		{"exp as a string", map[string]any{"sub": "s", "exp": "soon"}, false},
		{"exp beyond the maximum", map[string]any{"sub": "s", "exp": time.Now().Add(time.Hour).Unix()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := r.Sign(tt.claims); (err == nil) != tt.ok {
				t.Fatalf("got %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestKeyRingSharedStore: rings sharing a store — replicas, or one gateway across a restart
// — sign with the same keys and follow each other's rotations.
func TestKeyRingSharedStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kv := state.NewEmbedded(state.EmbeddedOptions{})
		defer kv.Close()
		store := auth.NewStateKeyStore(kv, auth.DefaultKeyStoreKey)
		cfg := auth.KeyRingConfig{RotateEvery: time.Hour, SyncInterval: 10 * time.Second}
		a := openRing(t, cfg, auth.KeyRingOptions{Store: store})
		defer a.Close()
		b := openRing(t, cfg, auth.KeyRingOptions{Store: store})
		defer b.Close()
		ka, kb := kidOf(t, mint(t, a, time.Minute)), kidOf(t, mint(t, b, time.Minute))
		if ka != kb {
			t.Fatalf("replicas sign with %s and %s", ka, kb)
		}
		if err := a.Rotate(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Second) // b re-reads the store
		if ja, jb := jwksKIDs(t, a.JWKS()), jwksKIDs(t, b.JWKS()); len(ja) != 2 || !slices.Equal(ja, jb) {
			t.Fatalf("after a rotation by one replica: JWKS %q and %q", ja, jb)
		}
		time.Sleep(5 * time.Minute) // publish_ahead passed: both sign with the new key
		na, nb := kidOf(t, mint(t, a, time.Minute)), kidOf(t, mint(t, b, time.Minute))
		if na != nb || na == ka {
			t.Fatalf("after the switch replicas sign with %s and %s (old %s)", na, nb, ka)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		c := openRing(t, cfg, auth.KeyRingOptions{Store: store}) // a restart
		defer c.Close()
		if kc := kidOf(t, mint(t, c, time.Minute)); kc != na {
			t.Fatalf("after a restart signing with %s, want %s", kc, na)
		}
	})
}

func TestKeyRingFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edFile := write("2025-01.pem", privatePEM(t, edKey()))
	ecFile := write("2025-02.pem", privatePEM(t, ecKey()))
	edKID, ecKID := must(auth.Thumbprint(edKey().Public())), must(auth.Thumbprint(ecKey().Public()))

	r := openRing(t, auth.KeyRingConfig{KeyDir: dir}, auth.KeyRingOptions{})
	defer r.Close()
	if got := jwksKIDs(t, r.JWKS()); !slices.Equal(got, []string{edKID, ecKID}) || len(r.PublicKeys()) != 2 {
		t.Fatalf("JWKS %q, %d public keys", got, len(r.PublicKeys()))
	}
	tok := mint(t, r, time.Minute)
	if kidOf(t, tok) != ecKID {
		t.Fatal("the last file does not sign")
	}
	if _, err := r.Verifier("svc").Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	if err := r.Rotate(context.Background()); err == nil {
		t.Fatal("rotating key files succeeded")
	}

	bad := []struct {
		name string
		cfg  auth.KeyRingConfig
		want string
	}{
		{"algorithm mismatch", auth.KeyRingConfig{KeyFiles: []string{edFile, ecFile}, Algorithm: "EdDSA"}, "but algorithm is EdDSA"},
		{"RSA key", auth.KeyRingConfig{KeyFiles: []string{write("rsa.key", privatePEM(t, rsaKey()))}}, "EdDSA (Ed25519) or ES256"},
		{"public key", auth.KeyRingConfig{KeyFiles: []string{write("pub.key", publicPEM(t, edKey().Public()))}}, "no private key"},
		{"empty dir", auth.KeyRingConfig{KeyDir: t.TempDir()}, "no *.pem file"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			r, err := auth.OpenKeyRing(context.Background(), tt.cfg, auth.KeyRingOptions{})
			if err == nil {
				_ = r.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestKeyRingForcedRotation: Rotate publishes a key that signs after publish_ahead; a second
// Rotate before then replaces it (it never signed anything).
func TestKeyRingForcedRotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := openRing(t, auth.KeyRingConfig{PublishAhead: time.Minute}, auth.KeyRingOptions{})
		defer r.Close()
		k1 := kidOf(t, mint(t, r, time.Minute))
		for range 2 {
			if err := r.Rotate(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		kids := jwksKIDs(t, r.JWKS())
		if len(kids) != 2 || kids[0] != k1 {
			t.Fatalf("JWKS after two rotations: %q, want K1 and one pending key", kids)
		}
		if kidOf(t, mint(t, r, time.Minute)) != k1 {
			t.Fatal("the pending key signs before publish_ahead")
		}
		time.Sleep(time.Minute)
		if kidOf(t, mint(t, r, time.Minute)) != kids[1] {
			t.Fatal("the new key does not sign after publish_ahead")
		}
	})
}
