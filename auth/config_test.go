package auth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
)

func TestConfigValidate(t *testing.T) {
	hash := "sha256:" + strings.Repeat("ab", 32)
	iss := func(mod func(*auth.IssuerConfig)) auth.Config {
		c := auth.IssuerConfig{Issuer: "https://id.test", Audiences: []string{"gatehouse"}, JWKSURL: "https://id.test/jwks"}
		mod(&c)
		return auth.Config{JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{c}}}
	}
	tests := []struct {
		name string
		cfg  auth.Config
		want string // "" for valid; else a substring of the error
	}{
		{"empty", auth.Config{}, ""},
		{"jwks url", iss(func(*auth.IssuerConfig) {}), ""},
		{"http jwks url to loopback", iss(func(c *auth.IssuerConfig) { c.JWKSURL = "http://127.0.0.1:9000/jwks" }), ""},
		{"http jwks url to localhost", iss(func(c *auth.IssuerConfig) { c.JWKSURL = "http://localhost/jwks" }), ""},
		{"http jwks url elsewhere", iss(func(c *auth.IssuerConfig) { c.JWKSURL = "http://id.test/jwks" }), "must be https"},
		{"relative jwks url", iss(func(c *auth.IssuerConfig) { c.JWKSURL = "/jwks" }), "not an absolute URL"},
		{"no issuers", auth.Config{JWT: &auth.JWTConfig{}}, "at least one issuer"},
		{"issuer twice", auth.Config{JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{
			{Issuer: "a", Audiences: []string{"x"}, Secret: secret}, {Issuer: "a", Audiences: []string{"x"}, Secret: secret},
		}}}, "configured twice"},
		{"no issuer name", iss(func(c *auth.IssuerConfig) { c.Issuer = "" }), "issuer is required"},
		{"no audience", iss(func(c *auth.IssuerConfig) { c.Audiences = nil }), "audiences"},
		{"empty audience", iss(func(c *auth.IssuerConfig) { c.Audiences = []string{""} }), "audiences"},
		{"no key source", iss(func(c *auth.IssuerConfig) { c.JWKSURL = "" }), "exactly one of"},
		{"two key sources", iss(func(c *auth.IssuerConfig) { c.PEMFiles = []string{"k.pem"} }), "exactly one of"},
		{"short secret", iss(func(c *auth.IssuerConfig) { c.JWKSURL, c.Secret = "", "short" }), "at least 32"},
		{"secret", iss(func(c *auth.IssuerConfig) { c.JWKSURL, c.Secret = "", secret }), ""},
		{"none", iss(func(c *auth.IssuerConfig) { c.Algorithms = []string{"none"} }), `"none" is not supported`},
		{"unknown algorithm", iss(func(c *auth.IssuerConfig) { c.Algorithms = []string{"RS1"} }), "not supported"},
		{"HMAC with public keys", iss(func(c *auth.IssuerConfig) { c.Algorithms = []string{"RS256", "HS256"} }), "HMAC is never allowed with public keys"},
		{"RSA with a secret", iss(func(c *auth.IssuerConfig) { c.JWKSURL, c.Secret, c.Algorithms = "", secret, []string{"RS256"} }), "not an HMAC algorithm"},
		{"HS512 with a 48-byte secret", iss(func(c *auth.IssuerConfig) { c.JWKSURL, c.Secret, c.Algorithms = "", secret, []string{"HS512"} }), "at least 64 bytes"},
		{"negative leeway", iss(func(c *auth.IssuerConfig) { c.Leeway = -time.Second }), "leeway"},
		{"huge leeway", iss(func(c *auth.IssuerConfig) { c.Leeway = time.Hour }), "leeway"},
		{"fast refresh", iss(func(c *auth.IssuerConfig) { c.RefreshInterval = time.Second }), "refresh_interval"},
		{"fast unknown-kid refresh", iss(func(c *auth.IssuerConfig) { c.RefreshRateLimit = time.Millisecond }), "refresh_rate_limit"},
		{"huge tokens", iss(func(c *auth.IssuerConfig) { c.MaxTokenBytes = 1 << 20 }), "max_token_bytes"},
		{"claim name with spaces", iss(func(c *auth.IssuerConfig) { c.RequiredClaims = []string{" tenant"} }), "surrounding spaces"},
		{"api key", auth.Config{APIKeys: []auth.APIKeyConfig{{Name: "ci", Hash: hash}}}, ""},
		{"api key without name", auth.Config{APIKeys: []auth.APIKeyConfig{{Hash: hash}}}, "name is required"},
		{"api key name twice", auth.Config{APIKeys: []auth.APIKeyConfig{{Name: "a", Hash: hash}, {Name: "a", Hash: "sha256:" + strings.Repeat("cd", 32)}}}, "used twice"},
		{"api key hash twice", auth.Config{APIKeys: []auth.APIKeyConfig{{Name: "a", Hash: hash}, {Name: "b", Hash: hash}}}, "configured twice"},
		{"api key in clear", auth.Config{APIKeys: []auth.APIKeyConfig{{Name: "a", Hash: "my-secret-key"}}}, `must be "sha256:"`},
		{"api key hash short", auth.Config{APIKeys: []auth.APIKeyConfig{{Name: "a", Hash: "sha256:abcd"}}}, "64 hex digits"},
		{"api key hash not hex", auth.Config{APIKeys: []auth.APIKeyConfig{{Name: "a", Hash: "sha256:" + strings.Repeat("zz", 32)}}}, "64 hex digits"},
		{"keyring", auth.Config{KeyRing: &auth.KeyRingConfig{}}, ""},
		{"keyring algorithm", auth.Config{KeyRing: &auth.KeyRingConfig{Algorithm: "RS256"}}, "not EdDSA or ES256"},
		{"keyring files and dir", auth.Config{KeyRing: &auth.KeyRingConfig{KeyFiles: []string{"a.pem"}, KeyDir: "keys"}}, "exclude each other"},
		{"keyring overlap too short", auth.Config{KeyRing: &auth.KeyRingConfig{Overlap: time.Minute}}, "shorter than max_token_ttl"},
		{"keyring publish_ahead too long", auth.Config{KeyRing: &auth.KeyRingConfig{RotateEvery: time.Hour, PublishAhead: 2 * time.Hour}}, "publish_ahead"},
		{"keyring short rotation, default publish_ahead", auth.Config{KeyRing: &auth.KeyRingConfig{RotateEvery: 2 * time.Minute, MaxTokenTTL: time.Minute}}, ""},
		{"keyring negative", auth.Config{KeyRing: &auth.KeyRingConfig{SyncInterval: -time.Second}}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestOpenErrors: problems only reading the files reveals are reported by Open, naming the
// issuer and the file.
func TestOpenErrors(t *testing.T) {
	privPEM := writeFile(t, "priv.pem", privatePEM(t, ecKey()))
	junk := writeFile(t, "junk.pem", []byte("not pem"))
	badJWKS := writeFile(t, "bad.json", []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}]}`))
	emptyJWKS := writeFile(t, "empty.json", []byte(`{"keys":[]}`))
	notJWKS := writeFile(t, "not.json", []byte(`[]`))
	ecPub := writeFile(t, "ec.pem", publicPEM(t, &ecKey().PublicKey))
	tests := []struct {
		name string
		c    auth.IssuerConfig
		want string
	}{
		{"missing PEM file", auth.IssuerConfig{PEMFiles: []string{"/nonexistent.pem"}}, "no such file"},
		{"private key as PEM", auth.IssuerConfig{PEMFiles: []string{privPEM}}, "holds a private key"},
		{"not PEM", auth.IssuerConfig{PEMFiles: []string{junk}}, "no PEM block"},
		{"EC key, only RSA algorithms", auth.IssuerConfig{PEMFiles: []string{ecPub}, Algorithms: []string{"RS256"}}, "no configured algorithm fits this EC key"},
		{"symmetric key in a JWKS file", auth.IssuerConfig{JWKSFile: badJWKS}, "symmetric (oct)"},
		{"empty JWKS file", auth.IssuerConfig{JWKSFile: emptyJWKS}, "no signature keys"},
		{"not a JWKS", auth.IssuerConfig{JWKSFile: notJWKS}, "not a JWK Set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.Issuer, tt.c.Audiences = "https://id.test", []string{"gatehouse"}
			a, err := auth.Open(context.Background(), auth.Config{JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{tt.c}}}, auth.Options{})
			if err == nil {
				_ = a.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "https://id.test") {
				t.Fatalf("got %v, want an error naming the issuer and containing %q", err, tt.want)
			}
		})
	}
}
