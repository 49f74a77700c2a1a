package auth

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// TokenCacheConfig is auth.jwt.cache: verified tokens are remembered, so a client that
// sends the same token call after call pays for its signature once. A cached token is
// still refused once it expires, and revocation is checked on every call, cached or not.
type TokenCacheConfig struct {
	// Disabled turns the cache off: every call verifies its token's signature.
	Disabled bool `yaml:"disabled" json:"disabled,omitempty"`
	// MaxEntries bounds the tokens remembered (default 10000).
	MaxEntries int `yaml:"max_entries" json:"max_entries,omitempty"`
	// TTL is the longest a token is remembered (default 1m, at most 10m): a key removed
	// from an issuer's JWK Set stops verifying its cached tokens at most TTL later (the JWKS
	// itself is refreshed every refresh_interval, 10m by default).
	TTL time.Duration `yaml:"ttl" json:"ttl,omitempty"`
}

// Token cache defaults and limits.
const (
	DefaultTokenCacheEntries = 10000
	DefaultTokenCacheTTL     = time.Minute
	maxTokenCacheTTL         = 10 * time.Minute
	maxTokenCacheEntries     = 1_000_000
)

func (c TokenCacheConfig) validate() error {
	switch {
	case c.MaxEntries < 0 || c.MaxEntries > maxTokenCacheEntries:
		return fmt.Errorf("cache.max_entries: %d is outside 0 … %d", c.MaxEntries, maxTokenCacheEntries)
	case c.TTL < 0 || c.TTL > maxTokenCacheTTL:
		return fmt.Errorf("cache.ttl: %s is outside 0 … %s", c.TTL, maxTokenCacheTTL)
	}
	return nil
}

// tokenCache remembers verified tokens by the SHA-256 of their compact form (the token
// itself is not kept as a key). Entries expire at the token's exp or TTL after they were
// added, whichever is first; a full cache drops a sixteenth of its entries (Go's map
// iteration order picks them) before it adds one.
type tokenCache struct {
	max     int
	ttl     time.Duration
	mu      sync.RWMutex
	entries map[[sha256.Size]byte]cachedToken
	hits    atomic.Int64 // for tests and, later, metrics
}

type cachedToken struct {
	p     gateway.Principal
	until time.Time
}

// newTokenCache returns the cache of cfg, nil when it is disabled.
func newTokenCache(cfg *TokenCacheConfig) *tokenCache {
	c := TokenCacheConfig{}
	if cfg != nil {
		c = *cfg
	}
	if c.Disabled {
		return nil
	}
	if c.MaxEntries == 0 {
		c.MaxEntries = DefaultTokenCacheEntries
	}
	if c.TTL == 0 {
		c.TTL = DefaultTokenCacheTTL
	}
	return &tokenCache{max: c.MaxEntries, ttl: c.TTL, entries: make(map[[sha256.Size]byte]cachedToken)}
}

// get returns the principal raw verified to, if it is remembered and has not expired.
func (c *tokenCache) get(raw string, now time.Time) (gateway.Principal, bool) {
	if c == nil {
		return gateway.Principal{}, false
	}
	key := sha256.Sum256([]byte(raw))
	c.mu.RLock()
	e, ok := c.entries[key]
	c.mu.RUnlock()
	if !ok || !now.Before(e.until) {
		return gateway.Principal{}, false
	}
	c.hits.Add(1)
	return e.p, true
}

// put remembers that raw verified to p, until exp (the token's) or ttl from now.
func (c *tokenCache) put(raw string, p gateway.Principal, exp, now time.Time) {
	if c == nil {
		return
	}
	until := now.Add(c.ttl)
	if exp.Before(until) {
		until = exp
	}
	if !now.Before(until) {
		return
	}
	key := sha256.Sum256([]byte(raw))
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		drop := max(c.max/16, 1)
		for k := range c.entries {
			if drop == 0 {
				break
			}
			delete(c.entries, k)
			drop--
		}
	}
	c.entries[key] = cachedToken{p: p, until: until}
}
