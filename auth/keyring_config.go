package auth

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// KeyRingConfig configures the gateway's own signing keys: either key files the operator
// rotates (KeyFiles or KeyDir), or keys the gateway generates, keeps in its key store and
// rotates every RotateEvery.
type KeyRingConfig struct {
	// Issuer is the iss of the tokens the ring signs (default "gatehouse").
	Issuer string `yaml:"issuer" json:"issuer,omitempty"`
	// Algorithm is EdDSA (Ed25519, the default) or ES256 (P-256), for generated keys. With
	// key files it is taken from each key's type and, when set, must match it.
	Algorithm string `yaml:"algorithm" json:"algorithm,omitempty"`
	// KeyFiles are PEM private keys (Ed25519 or P-256). The last one signs; all are
	// published and verify. Rotate by appending a new file and, once Overlap has passed,
	// removing the oldest, then reloading.
	KeyFiles []string `yaml:"key_files" json:"key_files,omitempty"`
	// KeyDir is a directory of such PEM files (*.pem), taken in file name order.
	KeyDir string `yaml:"key_dir" json:"key_dir,omitempty"`
	// RotateEvery is how long a generated key signs before the next one takes over
	// (default 24h).
	RotateEvery time.Duration `yaml:"rotate_every" json:"rotate_every,omitempty"`
	// MaxTokenTTL is the longest lifetime of a token the ring signs (default 15m).
	MaxTokenTTL time.Duration `yaml:"max_token_ttl" json:"max_token_ttl,omitempty"`
	// Overlap is how long a generated key keeps verifying after its successor took over; at
	// least MaxTokenTTL, so every token it signed expires first (default MaxTokenTTL + 1m).
	Overlap time.Duration `yaml:"overlap" json:"overlap,omitempty"`
	// PublishAhead is how long before it starts signing a new key is published, so that
	// verifiers caching the JWKS have it by then (default 5m, or RotateEvery/4 if shorter).
	PublishAhead time.Duration `yaml:"publish_ahead" json:"publish_ahead,omitempty"`
	// SyncInterval is how often the ring re-reads its key store, to follow rotations made by
	// other replicas sharing it, and checks whether a rotation is due (default 30s).
	SyncInterval time.Duration `yaml:"sync_interval" json:"sync_interval,omitempty"`
	// AdminScope is the scope a caller of admin.keys.* (list, emergency rotation) must hold
	// (default admin.keys).
	AdminScope string `yaml:"admin_scope" json:"admin_scope,omitempty"`
}

// Defaults of the key ring.
const (
	DefaultRingIssuer       = "gatehouse"
	DefaultRingAlgorithm    = algEdDSA
	DefaultRotateEvery      = 24 * time.Hour
	DefaultMaxTokenTTL      = 15 * time.Minute
	DefaultPublishAhead     = 5 * time.Minute
	DefaultRingSyncInterval = 30 * time.Second
	DefaultKeyAdminScope    = "admin.keys"
	// overlapMargin is added to MaxTokenTTL for the default Overlap: verifiers' leeway.
	overlapMargin = time.Minute
)

// ringAlgorithms are the algorithms the ring signs with.
var ringAlgorithms = []string{algEdDSA, algES256}

// Validate checks what the schema cannot. It reads no file: OpenKeyRing does.
func (c KeyRingConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Algorithm != "" && !slices.Contains(ringAlgorithms, c.Algorithm) {
		bad("algorithm: %q is not EdDSA or ES256", c.Algorithm)
	}
	if len(c.KeyFiles) > 0 && c.KeyDir != "" {
		bad("key_files and key_dir exclude each other")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"rotate_every", c.RotateEvery}, {"max_token_ttl", c.MaxTokenTTL}, {"overlap", c.Overlap}, {"publish_ahead", c.PublishAhead}, {"sync_interval", c.SyncInterval}} {
		if d.v < 0 {
			bad("%s: %s is negative", d.name, d.v)
		}
	}
	d := c.withDefaults()
	if d.Overlap < d.MaxTokenTTL {
		bad("overlap: %s is shorter than max_token_ttl (%s): tokens would outlive their key", d.Overlap, d.MaxTokenTTL)
	}
	if d.PublishAhead >= d.RotateEvery {
		bad("publish_ahead: %s is not shorter than rotate_every (%s)", d.PublishAhead, d.RotateEvery)
	}
	return errors.Join(errs...)
}

func (c KeyRingConfig) withDefaults() KeyRingConfig {
	if c.Issuer == "" {
		c.Issuer = DefaultRingIssuer
	}
	if c.RotateEvery == 0 {
		c.RotateEvery = DefaultRotateEvery
	}
	if c.MaxTokenTTL == 0 {
		c.MaxTokenTTL = DefaultMaxTokenTTL
	}
	if c.Overlap == 0 {
		c.Overlap = c.MaxTokenTTL + overlapMargin
	}
	if c.PublishAhead == 0 {
		c.PublishAhead = min(DefaultPublishAhead, c.RotateEvery/4)
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = DefaultRingSyncInterval
	}
	if c.AdminScope == "" {
		c.AdminScope = DefaultKeyAdminScope
	}
	return c
}

// generated reports whether the ring generates its keys (no key files).
func (c KeyRingConfig) generated() bool { return len(c.KeyFiles) == 0 && c.KeyDir == "" }
