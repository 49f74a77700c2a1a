package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
)

// BenchmarkAuthenticateJWT verifies one valid token per iteration through the whole path
// (size, parse, strict JSON, issuer, key lookup, signature, claims), per algorithm and key
// source.
func BenchmarkAuthenticateJWT(b *testing.B) {
	rsaFile := writeFile(b, "rsa.pem", publicPEM(b, &rsaKey().PublicKey))
	ecFile := writeFile(b, "ec.pem", publicPEM(b, &ecKey().PublicKey))
	edFile := writeFile(b, "ed.pem", publicPEM(b, edKey().Public()))
	jwks := newJWKSServer(b, jwk(b, &rsaKey().PublicKey, "rsa-1", "RS256"))
	a := open(b, auth.Config{JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{
		{Issuer: issPEM, Audiences: []string{"gatehouse"}, PEMFiles: []string{rsaFile, ecFile, edFile}},
		{Issuer: issSecret, Audiences: []string{"gatehouse"}, Secret: secret},
		{Issuer: issJWKS, Audiences: []string{"gatehouse"}, JWKSURL: jwks.URL},
	}}}, nil)
	kid := func(k any) string { return must(auth.Thumbprint(k)) }
	tokens := []struct{ name, tok string }{
		{"RS256", sign(b, "RS256", kid(&rsaKey().PublicKey), rsaKey(), claims(issPEM))},
		{"RS256-JWKS-URL", sign(b, "RS256", "rsa-1", rsaKey(), claims(issJWKS))},
		{"ES256", sign(b, "ES256", kid(&ecKey().PublicKey), ecKey(), claims(issPEM))},
		{"EdDSA", sign(b, "EdDSA", kid(edKey().Public()), edKey(), claims(issPEM))},
		{"HS256", sign(b, "HS256", "", []byte(secret), claims(issSecret))},
	}
	for _, tt := range tokens {
		b.Run(tt.name, func(b *testing.B) {
			creds := bearerOf(tt.tok)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Authenticate(ctx, creds); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAuthenticateRefused measures refusing a forged token: what an attacker costs.
func BenchmarkAuthenticateRefused(b *testing.B) {
	rsaFile := writeFile(b, "rsa.pem", publicPEM(b, &rsaKey().PublicKey))
	a := open(b, auth.Config{JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{
		{Issuer: issPEM, Audiences: []string{"gatehouse"}, PEMFiles: []string{rsaFile}},
	}}}, nil)
	creds := bearerOf(sign(b, "RS256", "", attackerRSA(), claims(issPEM)))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(ctx, creds); auth.ReasonOf(err) != auth.ReasonBadSignature {
			b.Fatal(err)
		}
	}
}

// BenchmarkKeyRing measures signing with the ring (Mint, which builds the claims, and Sign
// of prepared claims) and verifying what it signed, per algorithm.
func BenchmarkKeyRing(b *testing.B) {
	for _, alg := range []string{"EdDSA", "ES256"} {
		r, err := auth.OpenKeyRing(context.Background(), auth.KeyRingConfig{Algorithm: alg}, auth.KeyRingOptions{})
		if err != nil {
			b.Fatal(err)
		}
		req := auth.MintRequest{Subject: "alice", Actor: "gatehouse", Audience: []string{"svc"}, Scopes: []string{"read", "write"}, TTL: time.Minute}
		b.Run("Mint/"+alg, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Mint(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Sign/"+alg, func(b *testing.B) {
			c := map[string]any{"sub": "alice", "aud": "svc", "exp": time.Now().Add(time.Minute).Unix()}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Sign(c); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Verify/"+alg, func(b *testing.B) {
			m, err := r.Mint(context.Background(), req)
			if err != nil {
				b.Fatal(err)
			}
			v := r.Verifier("svc")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(context.Background(), m.Token); err != nil {
					b.Fatal(err)
				}
			}
		})
		_ = r.Close()
	}
}
