package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// keyRingConfig is baseConfig with a generated key ring.
var keyRingConfig = strings.Replace(baseConfig, "  anonymous: {}\n",
	"  anonymous: {}\n  keyring: {issuer: gatehouse, algorithm: EdDSA, rotate_every: 24h, max_token_ttl: 5m}\n", 1)

// servedKids returns the kids of the JWK Set the boundary serves, and the set itself.
func servedKids(t *testing.T, ts *testServer) ([]string, string) {
	t.Helper()
	status, _, body := getCard(t, ts, httprpc.JWKSPath, "")
	if status != http.StatusOK {
		t.Fatalf("jwks: %d %s", status, body)
	}
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.Unmarshal([]byte(body), &set); err != nil {
		t.Fatalf("jwks %s: %v", body, err)
	}
	kids := make([]string, 0, len(set.Keys))
	for _, k := range set.Keys {
		kids = append(kids, k.Kid)
	}
	return kids, body
}

// verifyWithServedJWKS verifies token with an authenticator whose only key source is the
// JWK Set jwks, as a backend that fetched it would.
func verifyWithServedJWKS(t *testing.T, jwks, token string) (gateway.Principal, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, []byte(jwks), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.Open(context.Background(), auth.Config{JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{{
		Issuer: "gatehouse", Audiences: []string{"calc"}, JWKSFile: file,
	}}}}, auth.Options{})
	if err != nil {
		t.Fatalf("verifier from the served JWKS: %v", err)
	}
	defer func() { _ = a.Close() }()
	return a.Authenticate(context.Background(), gateway.Credentials{Bearer: token})
}

// TestKeyRingJWKS: a token the gateway's ring mints verifies with the JWK Set the boundary
// serves; a rotation publishes the next key ahead while the current one still signs; a
// reload keeps the generated keys (they live in the state store).
func TestKeyRingJWKS(t *testing.T) {
	ts := start(t, keyRingConfig, nil)
	ring := ts.KeyRing()
	if ring == nil {
		t.Fatal("no key ring with auth.keyring configured")
	}
	minted, err := ring.Mint(context.Background(), auth.MintRequest{Subject: "alice", Actor: "gatehouse",
		Audience: []string{"calc"}, Scopes: []string{"calc.read"}, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	kids, jwks := servedKids(t, ts)
	if len(kids) != 1 {
		t.Fatalf("served kids %v, want the current key only", kids)
	}
	p, err := verifyWithServedJWKS(t, jwks, minted.Token)
	if err != nil || p.Subject != "alice" {
		t.Fatalf("verifying the minted token with the served JWKS: %+v, %v", p, err)
	}

	if err := ring.Rotate(context.Background()); err != nil {
		t.Fatal(err)
	}
	rotated, jwks := servedKids(t, ts)
	if len(rotated) != 2 || rotated[0] != kids[0] {
		t.Fatalf("served kids after a rotation %v, want %s and the next key", rotated, kids[0])
	}
	again, err := ring.Mint(context.Background(), auth.MintRequest{Subject: "bob", Audience: []string{"calc"}, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := verifyWithServedJWKS(t, jwks, again.Token); err != nil || p.Subject != "bob" {
		t.Fatalf("verifying after the rotation: %+v, %v", p, err)
	}

	if err := ts.Reload(mustParse(t, keyRingConfig)); err != nil {
		t.Fatal(err)
	}
	if ts.KeyRing() == ring {
		t.Fatal("reload kept the old ring")
	}
	if after, _ := servedKids(t, ts); strings.Join(after, ",") != strings.Join(rotated, ",") {
		t.Fatalf("served kids after a reload %v, want %v", after, rotated)
	}
	if _, err := verifyWithServedJWKS(t, jwks, minted.Token); err != nil {
		t.Fatalf("the first token after the reload: %v", err)
	}
}

// TestKeyRingOff: without auth.keyring there is no ring and the JWKS is empty.
func TestKeyRingOff(t *testing.T) {
	ts := start(t, baseConfig, nil)
	if ts.KeyRing() != nil {
		t.Fatal("a key ring without auth.keyring")
	}
	if kids, _ := servedKids(t, ts); len(kids) != 0 {
		t.Fatalf("served kids %v", kids)
	}
}

// TestKeyRingRefused: a ring that cannot be opened refuses the configuration, at start and
// on reload, where the old ring keeps serving.
func TestKeyRingRefused(t *testing.T) {
	bad := strings.Replace(baseConfig, "  anonymous: {}\n", "  anonymous: {}\n  keyring: {key_files: [/nonexistent/ring.pem]}\n", 1)
	if _, err := New(mustParse(t, bad), Options{}); err == nil {
		t.Fatal("New with an unreadable key file succeeded")
	}
	ts := start(t, keyRingConfig, nil)
	ring := ts.KeyRing()
	if err := ts.Reload(mustParse(t, bad)); err == nil {
		t.Fatal("reload with an unreadable key file succeeded")
	}
	if ts.KeyRing() != ring {
		t.Fatal("a refused reload replaced the ring")
	}
	if kids, _ := servedKids(t, ts); len(kids) != 1 {
		t.Fatalf("served kids after a refused reload %v", kids)
	}
}
