package auth

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// RevocationConfig tunes the revocation list (auth.revocation). The list is always on: an
// absent section means every default. It lives in the state store, so replicas sharing the
// store share it; the process opens it once (OpenRevocations) and a reload applies new
// settings to it (Revocations.Configure).
type RevocationConfig struct {
	// Refresh is how often a replica re-reads the list from the state store, so a
	// revocation made on another replica is honoured within Refresh (default 10s, at most
	// 30s). The replica that revokes honours it at once.
	Refresh time.Duration `yaml:"refresh" json:"refresh,omitempty"`
	// MaxEntries bounds the live revocations (jti and sub together) across the replicas
	// sharing the store (default 10000, at most MaxRevocationEntries); past it, revoking
	// fails until entries expire or are removed.
	MaxEntries int `yaml:"max_entries" json:"max_entries,omitempty"`
	// DefaultTTL is how long a revocation lasts when neither expires_at nor ttl is given
	// (default 24h). For a jti, give the token's exp as expires_at instead.
	DefaultTTL time.Duration `yaml:"default_ttl" json:"default_ttl,omitempty"`
	// MaxTTL bounds how far ahead a revocation may end (default 720h); a longer one is
	// refused, never silently shortened.
	MaxTTL time.Duration `yaml:"max_ttl" json:"max_ttl,omitempty"`
	// AdminScope is the scope a caller of admin.revocations.* must hold (default
	// admin.revocations).
	AdminScope string `yaml:"admin_scope" json:"admin_scope,omitempty"`
}

// Defaults and bounds of the revocation list.
const (
	DefaultRevocationRefresh    = 10 * time.Second
	DefaultRevocationMaxEntries = 10000
	DefaultRevocationTTL        = 24 * time.Hour
	DefaultRevocationMaxTTL     = 30 * 24 * time.Hour
	DefaultRevocationAdminScope = "admin.revocations"
	// MaxRevocationRefresh is the longest refresh: the list's promise is that every replica
	// honours a revocation within 30s.
	MaxRevocationRefresh = 30 * time.Second
	// MinRevocationRefresh is the shortest refresh, so replicas do not hammer the store.
	MinRevocationRefresh = 100 * time.Millisecond
	// MaxRevocationEntries bounds max_entries so the list's index stays inside one state
	// value (state.DefaultMaxValueBytes) whatever the entries are.
	MaxRevocationEntries = 15000
	// MaxRevocationTTL bounds max_ttl: nothing is revoked for longer than a year.
	MaxRevocationTTL = 365 * 24 * time.Hour
)

// Validate checks what the schema cannot.
func (c RevocationConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"refresh", c.Refresh}, {"default_ttl", c.DefaultTTL}, {"max_ttl", c.MaxTTL}} {
		if d.v < 0 {
			bad("%s: %s is negative", d.name, d.v)
		}
	}
	if c.MaxEntries < 0 {
		bad("max_entries: %d is negative", c.MaxEntries)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	d := c.withDefaults()
	if d.Refresh < MinRevocationRefresh || d.Refresh > MaxRevocationRefresh {
		bad("refresh: %s is outside %s … %s (every replica must honour a revocation within 30s)", d.Refresh, MinRevocationRefresh, MaxRevocationRefresh)
	}
	if d.MaxEntries > MaxRevocationEntries {
		bad("max_entries: %d is more than %d (the list must fit one state store value)", d.MaxEntries, MaxRevocationEntries)
	}
	if d.MaxTTL > MaxRevocationTTL {
		bad("max_ttl: %s is more than %s", d.MaxTTL, MaxRevocationTTL)
	}
	if d.DefaultTTL > d.MaxTTL {
		bad("default_ttl: %s is longer than max_ttl (%s)", d.DefaultTTL, d.MaxTTL)
	}
	if strings.ContainsAny(c.AdminScope, " \t\r\n") {
		bad("admin_scope: %q contains white space, which no scope can", c.AdminScope)
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero setting at its default.
func (c RevocationConfig) withDefaults() RevocationConfig {
	if c.Refresh == 0 {
		c.Refresh = DefaultRevocationRefresh
	}
	if c.MaxEntries == 0 {
		c.MaxEntries = DefaultRevocationMaxEntries
	}
	// Either TTL set alone never conflicts with the other's default.
	if c.DefaultTTL == 0 {
		c.DefaultTTL = DefaultRevocationTTL
		if c.MaxTTL > 0 {
			c.DefaultTTL = min(c.DefaultTTL, c.MaxTTL)
		}
	}
	if c.MaxTTL == 0 {
		c.MaxTTL = max(DefaultRevocationMaxTTL, c.DefaultTTL)
	}
	if c.AdminScope == "" {
		c.AdminScope = DefaultRevocationAdminScope
	}
	return c
}

// settings returns the settings of an optional section: nil means every default.
func (c *RevocationConfig) settings() RevocationConfig {
	if c == nil {
		return RevocationConfig{}.withDefaults()
	}
	return c.withDefaults()
}
