package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

const (
	devKey  = "../../configs/examples/dev-signing-key.pem"
	devJWKS = "../../configs/examples/dev-jwks.json"
)

// TestTokenVerifiesWithDevJWKS: a token minted by `gatehouse token` with the development
// key verifies with an Authenticator configured from the development JWKS, with the
// subject, scopes and claims given on the command line.
func TestTokenVerifiesWithDevJWKS(t *testing.T) {
	a, err := auth.Open(context.Background(), auth.Config{JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{
		{Issuer: devIssuer, Audiences: []string{devAudience, "billing"}, JWKSFile: devJWKS, Algorithms: []string{"RS256"}, TierClaim: "tier"},
	}}}, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tests := []struct {
		name   string
		args   []string
		scopes []string
		tier   string
	}{
		{"defaults", []string{"--sub", "alice", "--scope", "calc.read  calc.write"}, []string{"calc.read", "calc.write"}, "standard"},
		{"audiences, ttl, claims", []string{"--sub", "bob", "--aud", "billing", "--aud", "other", "--ttl", "5m", "--claim", "tier=enterprise"}, nil, "enterprise"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"token", "--key", devKey}, tt.args...), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			tok := strings.TrimSpace(stdout.String())
			p, err := a.Authenticate(context.Background(), gateway.Credentials{Bearer: tok})
			if err != nil {
				t.Fatalf("verifying the minted token: %v (reason %q)", err, auth.ReasonOf(err))
			}
			if p.Subject != tt.args[1] || !slices.Equal(p.Scopes, tt.scopes) || p.Tier != tt.tier {
				t.Fatalf("principal %+v", p)
			}
		})
	}
}

func TestTokenKeyTypes(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, key any) string {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	for _, k := range []struct{ file, alg string }{{write("ec.pem", ec), `"alg":"ES384"`}, {write("ed.pem", ed), `"alg":"EdDSA"`}} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"token", "--key", k.file, "--sub", "s", "--kid", "k1"}, &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", k.file, code, stderr.String())
		}
		header, err := base64.RawURLEncoding.DecodeString(strings.Split(stdout.String(), ".")[0])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(header), k.alg) || !strings.Contains(string(header), `"kid":"k1"`) {
			t.Fatalf("%s: header %s", k.file, header)
		}
	}
}

func TestTokenErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no key", []string{"--sub", "a"}, 2, "--key and --sub are required"},
		{"no subject", []string{"--key", devKey}, 2, "--key and --sub are required"},
		{"stray argument", []string{"--key", devKey, "--sub", "a", "extra"}, 2, "nothing else"},
		{"bad ttl", []string{"--key", devKey, "--sub", "a", "--ttl", "-1h"}, 2, "--ttl must be positive"},
		{"bad claim", []string{"--key", devKey, "--sub", "a", "--claim", "novalue"}, 2, "not NAME=VALUE"},
		{"claim overriding sub", []string{"--key", devKey, "--sub", "a", "--claim", "sub=root"}, 2, "its own flag"},
		{"missing key file", []string{"--key", "/nonexistent.pem", "--sub", "a"}, 1, "no such file"},
		{"not a private key", []string{"--key", devJWKS, "--sub", "a"}, 1, "no private key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"token"}, tt.args...), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) || stdout.Len() != 0 {
				t.Fatalf("exit %d, stderr %q, stdout %q; want exit %d and %q", code, stderr.String(), stdout.String(), tt.code, tt.want)
			}
		})
	}
}
