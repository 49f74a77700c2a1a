package auth_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

const (
	issJWKS   = "https://jwks.test"
	issFile   = "https://file.test"
	issPEM    = "https://pem.test"
	issSecret = "https://secret.test"
)

// fixture is an Authenticator trusting one issuer of each key source.
type fixture struct {
	auth  *auth.Authenticator
	jwks  *jwksServer
	logs  *logBuffer
	edKID string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{logs: &logBuffer{}}
	f.jwks = newJWKSServer(t, jwk(t, &rsaKey().PublicKey, "rsa-1", ""), jwk(t, &ecKey().PublicKey, "ec-1", "ES256"))
	file := writeFile(t, "jwks.json", must(json.Marshal(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{jwk(t, &ecKey().PublicKey, "file-ec", "ES256")}})))
	pemFile := writeFile(t, "ed.pem", publicPEM(t, edKey().Public()))
	f.edKID = must(auth.Thumbprint(edKey().Public()))
	aud := []string{"gatehouse", "gatehouse-admin"}
	f.auth = open(t, auth.Config{
		JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{
			{Issuer: issJWKS, Audiences: aud, JWKSURL: f.jwks.URL, Algorithms: []string{"RS256", "PS256", "ES256"}, RefreshRateLimit: time.Hour},
			{Issuer: issFile, Audiences: aud, JWKSFile: file},
			{Issuer: issPEM, Audiences: aud, PEMFiles: []string{pemFile}, RequiredClaims: []string{"tenant"}, TierClaim: "tier"},
			{Issuer: issSecret, Audiences: aud, Secret: secret},
		}},
	}, f.logs)
	return f
}

func TestVerifyAccepts(t *testing.T) {
	f := newFixture(t)
	attacker := newJWKSServer(t, jwk(t, &attackerRSA().PublicKey, "rsa-1", "RS256"))
	pem := func(overrides ...any) map[string]any {
		return claims(issPEM, append([]any{"tenant", "acme"}, overrides...)...)
	}
	tests := []struct {
		name string
		tok  string
	}{
		{"RS256 from a JWKS URL", sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS))},
		{"PS256 from a JWKS URL", sign(t, "PS256", "rsa-1", rsaKey(), claims(issJWKS))},
		{"ES256 from a JWKS URL", sign(t, "ES256", "ec-1", ecKey(), claims(issJWKS))},
		{"ES256 from a JWKS file", sign(t, "ES256", "file-ec", ecKey(), claims(issFile))},
		{"EdDSA from a PEM file, kid = thumbprint", sign(t, "EdDSA", f.edKID, edKey(), pem())},
		{"EdDSA from a PEM file, no kid", sign(t, "EdDSA", "", edKey(), pem())},
		{"HS256 with the secret", sign(t, "HS256", "", []byte(secret), claims(issSecret))},
		{"HS384 with the secret", sign(t, "HS384", "any-kid", []byte(secret), claims(issSecret))},
		{"aud array naming one audience", sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS, "aud", []string{"other", "gatehouse-admin"}))},
		{"expired within the leeway", sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS, "exp", now.Add(-20*time.Second).Unix()))},
		{"nbf within the leeway", sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS, "nbf", now.Add(20*time.Second).Unix()))},
		{"fractional exp", sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS, "exp", float64(now.Unix())+60.5))},
		{"typ at+jwt", sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS), "typ", "at+jwt")},
		{"jku/x5u/jwk headers are ignored, never fetched", sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS),
			"jku", attacker.URL, "x5u", attacker.URL, "jwk", jwk(t, &attackerRSA().PublicKey, "x", "RS256"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := bearer(f.auth, tt.tok)
			if err != nil {
				t.Fatalf("got %v (reason %q), want accepted", err, auth.ReasonOf(err))
			}
			if p.Subject != "alice" || !slices.Equal(p.Scopes, []string{"read", "write"}) || p.Anonymous || p.Claims["sub"] != "alice" {
				t.Fatalf("got principal %+v", p)
			}
		})
	}
	if n := attacker.hits.Load(); n != 0 {
		t.Fatalf("the attacker's key server was fetched %d times", n)
	}
}

func TestPrincipalScopesAndTier(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name   string
		claims map[string]any
		scopes []string
		tier   string
	}{
		{"scope string", claims(issPEM, "tenant", "t", "scope", " a  b "), []string{"a", "b"}, "standard"},
		{"scp array", claims(issPEM, "tenant", "t", "scope", nil, "scp", []string{"x", "y"}), []string{"x", "y"}, "standard"},
		{"scp string (Azure)", claims(issPEM, "tenant", "t", "scope", nil, "scp", "x y"), []string{"x", "y"}, "standard"},
		{"both, deduplicated", claims(issPEM, "tenant", "t", "scope", "b c", "scp", []string{"a", "b"}), []string{"b", "c", "a"}, "standard"},
		{"no scopes", claims(issPEM, "tenant", "t", "scope", nil), nil, "standard"},
		{"tier claim", claims(issPEM, "tenant", "t", "tier", "enterprise"), []string{"read", "write"}, "enterprise"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := bearer(f.auth, sign(t, "EdDSA", f.edKID, edKey(), tt.claims))
			if err != nil {
				t.Fatalf("got %v", err)
			}
			if !slices.Equal(p.Scopes, tt.scopes) || p.Tier != tt.tier || p.Claims["tenant"] != "t" {
				t.Fatalf("got scopes %q tier %q claims %v; want %q %q", p.Scopes, p.Tier, p.Claims, tt.scopes, tt.tier)
			}
		})
	}
}

// TestJWKSRotation: a key added to the issuer's JWKS is picked up by the fetch an unknown
// kid causes, once; further unknown kids within the rate limit are refused without fetching.
func TestJWKSRotation(t *testing.T) {
	f := newFixture(t)
	if n := f.jwks.hits.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times at start, want 1", n)
	}
	f.jwks.set(jwk(t, &rsaKey().PublicKey, "rsa-1", ""), jwk(t, &rsaKey2().PublicKey, "rsa-2", "RS256"))
	tok := sign(t, "RS256", "rsa-2", rsaKey2(), claims(issJWKS))
	if _, err := bearer(f.auth, tok); err != nil {
		t.Fatalf("token of the new key: %v (reason %q)", err, auth.ReasonOf(err))
	}
	if n := f.jwks.hits.Load(); n != 2 {
		t.Fatalf("JWKS fetched %d times, want 2", n)
	}
	for i := range 5 {
		_, err := bearer(f.auth, sign(t, "RS256", "rsa-unknown", rsaKey2(), claims(issJWKS)))
		if auth.ReasonOf(err) != auth.ReasonUnknownKey {
			t.Fatalf("unknown kid %d: got %v", i, err)
		}
	}
	if _, err := bearer(f.auth, tok); err != nil {
		t.Fatalf("the new key, cached: %v", err)
	}
	if n := f.jwks.hits.Load(); n != 2 {
		t.Fatalf("JWKS fetched %d times after refused unknown kids, want still 2", n)
	}
}

// TestJWKSRefreshRateLimit: once the rate limit's interval has passed, an unknown kid may
// cause one more fetch.
func TestJWKSRefreshRateLimit(t *testing.T) {
	srv := newJWKSServer(t, jwk(t, &rsaKey().PublicKey, "rsa-1", "RS256"))
	a := open(t, auth.Config{JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{
		{Issuer: issJWKS, Audiences: []string{"gatehouse"}, JWKSURL: srv.URL, RefreshRateLimit: time.Second},
	}}}, nil)
	unknown := sign(t, "RS256", "nope", rsaKey(), claims(issJWKS))
	for range 3 {
		_, _ = bearer(a, unknown)
	}
	if n := srv.hits.Load(); n != 2 {
		t.Fatalf("fetched %d times, want 2 (start + one unknown-kid refresh)", n)
	}
	time.Sleep(1100 * time.Millisecond)
	for range 3 {
		_, _ = bearer(a, unknown)
	}
	if n := srv.hits.Load(); n != 3 {
		t.Fatalf("fetched %d times after the interval, want 3", n)
	}
}

// TestJWKSDownAtStart: an unreachable JWKS does not keep the gateway from starting; its
// tokens are refused until the keys can be fetched, and the failure is logged without any
// token.
func TestJWKSDownAtStart(t *testing.T) {
	srv := newJWKSServer(t)
	url := srv.URL
	srv.Close()
	logs := &logBuffer{}
	a := open(t, auth.Config{JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{
		{Issuer: issJWKS, Audiences: []string{"gatehouse"}, JWKSURL: url},
	}}}, logs)
	tok := sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS))
	if _, err := bearer(a, tok); auth.ReasonOf(err) != auth.ReasonUnknownKey {
		t.Fatalf("got %v, want unknown key", err)
	}
	if l := leaks(tok, logs.String()); len(l) > 0 || logs.String() == "" {
		t.Fatalf("log %q: want the fetch failure, without the token", logs.String())
	}
}

func TestAPIKeys(t *testing.T) {
	key := "ghk_3q2-7V9xWmA1nC4bY8dZ0eF6gH5jK2lM"
	sum := sha256.Sum256([]byte(key))
	a := open(t, auth.Config{
		APIKeys:   []auth.APIKeyConfig{{Name: "ci", Hash: "sha256:" + hex.EncodeToString(sum[:]), Scopes: []string{"deploy"}, Tier: "enterprise"}},
		Anonymous: &auth.AnonymousConfig{},
	}, nil)
	loopback := netip.MustParseAddrPort("127.0.0.1:4000")
	tests := []struct {
		name   string
		creds  gateway.Credentials
		reason auth.Reason // "" for accepted
	}{
		{"X-API-Key", gateway.Credentials{APIKey: key}, ""},
		{"Authorization: ApiKey (left whole by the face)", gateway.Credentials{Bearer: "ApiKey " + key}, ""},
		{"Authorization: apikey, any case", gateway.Credentials{Bearer: "apikey " + key}, ""},
		{"Authorization: Bearer <apiKey> (session-RPC clients)", gateway.Credentials{Bearer: key}, ""},
		{"wrong key", gateway.Credentials{APIKey: key + "x"}, auth.ReasonUnknownAPIKey},
		{"wrong key as bearer", gateway.Credentials{Bearer: "not-a-key"}, auth.ReasonUnknownAPIKey},
		{"huge key", gateway.Credentials{APIKey: string(make([]byte, 4096))}, auth.ReasonUnknownAPIKey},
		{"a key and a bearer token", gateway.Credentials{APIKey: key, Bearer: "a.b.c"}, auth.ReasonAmbiguous},
		{"a key twice", gateway.Credentials{APIKey: key, Bearer: "ApiKey " + key}, auth.ReasonAmbiguous},
		{"Basic scheme", gateway.Credentials{Bearer: "Basic dXNlcjpwYXNz"}, auth.ReasonUnsupportedScheme},
		{"a JWT with no issuer configured", gateway.Credentials{Bearer: "a.b.c"}, auth.ReasonNotAccepted},
		{"wrong key never falls back to anonymous", gateway.Credentials{APIKey: "x", Remote: loopback}, auth.ReasonUnknownAPIKey},
		{"empty ApiKey never falls back to anonymous", gateway.Credentials{Bearer: "ApiKey   ", Remote: loopback}, auth.ReasonMalformed},
		{"empty Bearer value never falls back to anonymous", gateway.Credentials{Bearer: "Bearer  ", Remote: loopback}, auth.ReasonUnsupportedScheme},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := a.Authenticate(context.Background(), tt.creds)
			if tt.reason != "" {
				if got := auth.ReasonOf(err); got != tt.reason {
					t.Fatalf("got %+v, %v; want reason %q", p, err, tt.reason)
				}
				return
			}
			if err != nil || p.Subject != "ci" || p.Tier != "enterprise" || !slices.Equal(p.Scopes, []string{"deploy"}) || p.Claims != nil {
				t.Fatalf("got %+v, %v", p, err)
			}
		})
	}
}

func TestAuthenticateAnonymous(t *testing.T) {
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
			for _, a := range []gateway.Authenticator{open(t, tt.cfg, nil)} {
				p, err := a.Authenticate(context.Background(), tt.creds)
				if !tt.ok {
					if ge := gateway.AsError(err); ge == nil || ge.Code() != schemas.CodeAuthentication {
						t.Fatalf("got %+v, %v; want AUTHENTICATION_FAILED", p, err)
					}
					continue
				}
				if err != nil || !p.Anonymous || p.Tier != tt.tier {
					t.Fatalf("got %+v, %v; want anonymous of tier %q", p, err, tt.tier)
				}
			}
		})
	}
}

func TestIssuersAndAnonymousOnly(t *testing.T) {
	f := newFixture(t)
	if got := f.auth.Issuers(); !slices.Equal(got, []string{issFile, issJWKS, issPEM, issSecret}) {
		t.Fatalf("Issuers() = %q", got)
	}
	if !(auth.Config{Anonymous: &auth.AnonymousConfig{}}).AnonymousOnly() || (auth.Config{Anonymous: &auth.AnonymousConfig{}, APIKeys: []auth.APIKeyConfig{{}}}).AnonymousOnly() {
		t.Fatal("AnonymousOnly")
	}
}
