package auth_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
)

// openCached opens an authenticator of the secret issuer with cache on clock c.
func openCached(t *testing.T, c *movingClock, cache *auth.TokenCacheConfig) *auth.Authenticator {
	t.Helper()
	a, err := auth.Open(context.Background(), auth.Config{JWT: &auth.JWTConfig{
		Issuers: []auth.IssuerConfig{{Issuer: issSecret, Audiences: []string{"gatehouse"}, Secret: secret}},
		Cache:   cache,
	}}, auth.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// TestTokenCache: a token verified once is answered from the cache until its exp or the
// cache's ttl, whichever comes first; an expired token is refused even though it was
// cached; the cache never holds more than max_entries; disabled, every call verifies.
func TestTokenCache(t *testing.T) {
	tok := sign(t, "HS256", "", []byte(secret), claims(issSecret)) // exp = now + 5m

	t.Run("hit until the ttl, then verified again", func(t *testing.T) {
		c := &movingClock{}
		a := openCached(t, c, &auth.TokenCacheConfig{TTL: time.Minute})
		first, err := bearer(a, tok)
		if err != nil || auth.CacheHits(a) != 0 {
			t.Fatalf("first call: %v, %d hits", err, auth.CacheHits(a))
		}
		again, err := bearer(a, tok)
		if err != nil || auth.CacheHits(a) != 1 || again.Subject != first.Subject || again.Bearer != tok || len(again.Scopes) != 2 {
			t.Fatalf("second call: %+v, %v, %d hits", again, err, auth.CacheHits(a))
		}
		c.Advance(time.Minute) // the ttl has passed: verified again, then cached again
		if _, err := bearer(a, tok); err != nil || auth.CacheHits(a) != 1 {
			t.Fatalf("after the ttl: %v, %d hits", err, auth.CacheHits(a))
		}
		if _, err := bearer(a, tok); err != nil || auth.CacheHits(a) != 2 {
			t.Fatalf("cached again: %v, %d hits", err, auth.CacheHits(a))
		}
	})
	t.Run("an expired token is refused, cached or not", func(t *testing.T) {
		c := &movingClock{}
		a := openCached(t, c, &auth.TokenCacheConfig{TTL: 10 * time.Minute})
		if _, err := bearer(a, tok); err != nil {
			t.Fatal(err)
		}
		c.Advance(5*time.Minute + 31*time.Second) // past exp and the 30s leeway
		if _, err := bearer(a, tok); auth.ReasonOf(err) != auth.ReasonExpired || auth.CacheHits(a) != 0 {
			t.Fatalf("expired: %v, %d hits", err, auth.CacheHits(a))
		}
	})
	t.Run("max_entries bounds the cache", func(t *testing.T) {
		c := &movingClock{}
		a := openCached(t, c, &auth.TokenCacheConfig{MaxEntries: 4})
		for i := range 10 {
			if _, err := bearer(a, sign(t, "HS256", "", []byte(secret), claims(issSecret, "jti", fmt.Sprint(i)))); err != nil {
				t.Fatal(err)
			}
			if n := auth.CacheLen(a); n > 4 {
				t.Fatalf("%d tokens cached, max_entries 4", n)
			}
		}
	})
	t.Run("disabled", func(t *testing.T) {
		c := &movingClock{}
		a := openCached(t, c, &auth.TokenCacheConfig{Disabled: true})
		for range 3 {
			if _, err := bearer(a, tok); err != nil {
				t.Fatal(err)
			}
		}
		if auth.CacheHits(a) != 0 {
			t.Fatalf("%d hits with the cache disabled", auth.CacheHits(a))
		}
	})
	t.Run("a refused token is not cached", func(t *testing.T) {
		c := &movingClock{}
		a := openCached(t, c, nil)
		forged := sign(t, "HS256", "", []byte("another secret, just as long as the real one"), claims(issSecret))
		for range 2 {
			if _, err := bearer(a, forged); auth.ReasonOf(err) != auth.ReasonBadSignature {
				t.Fatalf("forged: %v", err)
			}
		}
		if auth.CacheLen(a) != 0 || auth.CacheHits(a) != 0 {
			t.Fatal("a refused token was cached")
		}
	})
}

func TestTokenCacheConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    auth.TokenCacheConfig
		ok   bool
	}{
		{"defaults", auth.TokenCacheConfig{}, true},
		{"ttl at its maximum", auth.TokenCacheConfig{TTL: 10 * time.Minute}, true},
		{"ttl past it", auth.TokenCacheConfig{TTL: 10*time.Minute + time.Second}, false},
		{"negative ttl", auth.TokenCacheConfig{TTL: -time.Second}, false},
		{"max_entries at its maximum", auth.TokenCacheConfig{MaxEntries: 1_000_000}, true},
		{"max_entries past it", auth.TokenCacheConfig{MaxEntries: 1_000_001}, false},
		{"negative max_entries", auth.TokenCacheConfig{MaxEntries: -1}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := auth.Config{JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{{Issuer: issSecret, Audiences: []string{"gatehouse"}, Secret: secret}}, Cache: &tt.c}}
			if err := cfg.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate: %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
