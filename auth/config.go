package auth

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Config is the auth section of the configuration file. With no method configured every
// call fails with AUTHENTICATION_FAILED: the gateway never serves without a decision.
type Config struct {
	// JWT verifies bearer JWTs from the configured issuers.
	JWT *JWTConfig `yaml:"jwt" json:"jwt,omitempty"`
	// APIKeys are the API keys machine clients may present, stored hashed.
	APIKeys []APIKeyConfig `yaml:"api_keys" json:"api_keys,omitempty"`
	// Anonymous admits callers that present no credential.
	Anonymous *AnonymousConfig `yaml:"anonymous" json:"anonymous,omitempty"`
	// ClientCert grants callers authenticated by a verified client certificate (a listener
	// with tls.client_ca_file); absent, they are identified and hold no scope.
	ClientCert *ClientCertConfig `yaml:"client_cert" json:"client_cert,omitempty"`
	// KeyRing is the gateway's own signing keys, for the tokens it mints for downstream hops
	// and publishes at /.well-known/jwks.json; absent, the gateway mints no tokens.
	KeyRing *KeyRingConfig `yaml:"keyring" json:"keyring,omitempty"`
	// Revocation tunes the revocation list (always on; absent, every default). Like the key
	// ring it is per process, over the state store: opened once, re-configured on reload.
	Revocation *RevocationConfig `yaml:"revocation" json:"revocation,omitempty"`
}

// JWTConfig configures bearer JWT verification.
type JWTConfig struct {
	// Issuers are the token issuers trusted; a token's iss claim chooses one.
	Issuers []IssuerConfig `yaml:"issuers" json:"issuers"`
	// Cache remembers verified tokens (tokencache.go); on by default.
	Cache *TokenCacheConfig `yaml:"cache" json:"cache,omitempty"`
}

// IssuerConfig is one trusted token issuer and where its verification keys come from:
// exactly one of JWKSURL, JWKSFile, PEMFiles and Secret.
type IssuerConfig struct {
	// Issuer is the exact value of the iss claim of this issuer's tokens.
	Issuer string `yaml:"issuer" json:"issuer"`
	// Audiences are the aud values accepted; a token must name at least one of them.
	Audiences []string `yaml:"audiences" json:"audiences"`
	// JWKSURL is the issuer's JWK Set (https, or http to a loopback host), fetched at start,
	// every RefreshInterval, and when a token names a key id not in the cached set.
	JWKSURL string `yaml:"jwks_url" json:"jwks_url,omitempty"`
	// JWKSFile is a JWK Set file of public keys, read at start and on reload.
	JWKSFile string `yaml:"jwks_file" json:"jwks_file,omitempty"`
	// PEMFiles are PEM files of public keys or certificates; each key's id is its RFC 7638
	// thumbprint.
	PEMFiles []string `yaml:"pem_files" json:"pem_files,omitempty"`
	// Secret is a shared HMAC secret of at least 32 bytes, for development only (use
	// ${ENV} to keep it out of the file).
	Secret string `yaml:"secret" json:"secret,omitempty"`
	// Algorithms are the JWS algorithms accepted; each key verifies only those of its own
	// type (RSA: RS*/PS*; EC: the ES* of its curve; Ed25519: EdDSA; Secret: HS*). Default:
	// RS256 and PS256 for RSA keys, the curve's ES* for EC keys, EdDSA, and every HS* the
	// secret is long enough for.
	Algorithms []string `yaml:"algorithms" json:"algorithms,omitempty"`
	// RequiredClaims must be present (and not null) in every token, beside sub, aud and exp,
	// which always are.
	RequiredClaims []string `yaml:"required_claims" json:"required_claims,omitempty"`
	// Leeway is the clock skew allowed on exp, nbf and iat (default 30s).
	Leeway time.Duration `yaml:"leeway" json:"leeway,omitempty"`
	// RefreshInterval is how often the JWKS URL is fetched again (default 10m).
	RefreshInterval time.Duration `yaml:"refresh_interval" json:"refresh_interval,omitempty"`
	// RefreshRateLimit is the least time between two fetches of the JWKS URL caused by
	// tokens naming an unknown key id (default 10s); such tokens are refused meanwhile.
	RefreshRateLimit time.Duration `yaml:"refresh_rate_limit" json:"refresh_rate_limit,omitempty"`
	// MaxTokenBytes bounds a token's length; a longer one is refused before it is parsed
	// (default 8192).
	MaxTokenBytes int `yaml:"max_token_bytes" json:"max_token_bytes,omitempty"`
	// ScopeClaims are the claims scopes are read from: a string of space-separated scopes or
	// an array of strings (default scope, scp).
	ScopeClaims []string `yaml:"scope_claims" json:"scope_claims,omitempty"`
	// TierClaim is the string claim naming the caller's client tier; absent or without the
	// claim, the tier is "standard".
	TierClaim string `yaml:"tier_claim" json:"tier_claim,omitempty"`
}

// APIKeyConfig is one API key. Only its SHA-256 hash is configured: keys are high-entropy
// random strings (32 random bytes, encoded), for which a fast hash is as good as a slow
// one, since no dictionary covers them.
type APIKeyConfig struct {
	// Name identifies the key's holder; it becomes the principal's subject.
	Name string `yaml:"name" json:"name"`
	// Hash is "sha256:" followed by the 64 lowercase hex digits of the key's SHA-256.
	Hash string `yaml:"hash" json:"hash"`
	// Scopes are the scopes the holder gets.
	Scopes []string `yaml:"scopes" json:"scopes,omitempty"`
	// Tier is the holder's client tier (default "standard").
	Tier string `yaml:"tier" json:"tier,omitempty"`
}

// Defaults of the jwt issuers' settings.
const (
	DefaultLeeway           = 30 * time.Second
	DefaultRefreshInterval  = 10 * time.Minute
	DefaultRefreshRateLimit = 10 * time.Second
	DefaultMaxTokenBytes    = 8 << 10
	// MinSecretBytes is the shortest HMAC secret accepted (HS256's hash size).
	MinSecretBytes = 32
	// maxTokenBytesLimit caps max_token_bytes: a header line cannot carry much more anyway.
	maxTokenBytesLimit = 64 << 10
	apiKeyHashPrefix   = "sha256:"
)

// defaultScopeClaims are the claims scopes are read from by default.
var defaultScopeClaims = []string{claimScope, claimScp}

// AnonymousOnly reports whether anonymous access is the only method configured (so callers
// need no credential at all, as an agent card's auth "none" announces).
func (c Config) AnonymousOnly() bool {
	return c.Anonymous != nil && c.JWT == nil && len(c.APIKeys) == 0
}

// Validate checks what the schema cannot. It reads no file: Open does.
func (c Config) Validate() error {
	var errs []error
	if c.JWT != nil {
		errs = append(errs, c.JWT.validate())
	}
	errs = append(errs, validateAPIKeys(c.APIKeys))
	if c.KeyRing != nil {
		if err := c.KeyRing.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("keyring: %w", err))
		}
	}
	if c.Revocation != nil {
		if err := c.Revocation.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("revocation: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (c *JWTConfig) validate() error {
	if len(c.Issuers) == 0 {
		return errors.New("jwt.issuers: at least one issuer is required")
	}
	var errs []error
	if c.Cache != nil {
		errs = append(errs, c.Cache.validate())
	}
	seen := map[string]bool{}
	for i, ic := range c.Issuers {
		if seen[ic.Issuer] {
			errs = append(errs, fmt.Errorf("jwt.issuers[%d]: issuer %q is configured twice", i, ic.Issuer))
		}
		seen[ic.Issuer] = true
		if err := ic.validate(); err != nil {
			errs = append(errs, fmt.Errorf("jwt.issuers[%d] (%s): %w", i, ic.Issuer, err))
		}
	}
	return errors.Join(errs...)
}

func (c IssuerConfig) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Issuer == "" {
		bad("issuer is required")
	}
	if len(c.Audiences) == 0 || slices.Contains(c.Audiences, "") {
		bad("audiences: at least one non-empty audience is required")
	}
	sources := 0
	for _, set := range []bool{c.JWKSURL != "", c.JWKSFile != "", len(c.PEMFiles) > 0, c.Secret != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		bad("exactly one of jwks_url, jwks_file, pem_files, secret is required")
	}
	if c.JWKSURL != "" {
		if err := checkJWKSURL(c.JWKSURL); err != nil {
			bad("jwks_url: %v", err)
		}
	}
	if c.Secret != "" && len(c.Secret) < MinSecretBytes {
		bad("secret: %d bytes long: at least %d are required (for example `openssl rand -base64 48`)", len(c.Secret), MinSecretBytes)
	}
	if err := c.validateAlgorithms(); err != nil {
		errs = append(errs, err)
	}
	if c.Leeway < 0 || c.Leeway > 5*time.Minute {
		bad("leeway: %s is outside 0 … 5m", c.Leeway)
	}
	if c.RefreshInterval != 0 && c.RefreshInterval < time.Minute {
		bad("refresh_interval: %s is shorter than 1m", c.RefreshInterval)
	}
	if c.RefreshRateLimit != 0 && c.RefreshRateLimit < time.Second {
		bad("refresh_rate_limit: %s is shorter than 1s", c.RefreshRateLimit)
	}
	if c.MaxTokenBytes < 0 || c.MaxTokenBytes > maxTokenBytesLimit {
		bad("max_token_bytes: %d is outside 1 … %d", c.MaxTokenBytes, maxTokenBytesLimit)
	}
	for _, name := range slices.Concat(c.RequiredClaims, c.ScopeClaims, []string{c.TierClaim}) {
		if strings.TrimSpace(name) != name {
			bad("claim name %q has surrounding spaces", name)
		}
	}
	return errors.Join(errs...)
}

// validateAlgorithms checks that every algorithm is supported and fits the key source:
// HMAC only with a secret, and a secret only with HMAC algorithms it is long enough for.
func (c IssuerConfig) validateAlgorithms() error {
	var errs []error
	for _, alg := range c.Algorithms {
		hmac := slices.Contains(hmacAlgorithms, alg)
		switch {
		case !slices.Contains(supportedAlgorithms, alg):
			errs = append(errs, fmt.Errorf("algorithms: %q is not supported (one of %s)", alg, strings.Join(supportedAlgorithms, ", ")))
		case hmac && c.Secret == "":
			errs = append(errs, fmt.Errorf("algorithms: %s needs a secret; HMAC is never allowed with public keys", alg))
		case !hmac && c.Secret != "":
			errs = append(errs, fmt.Errorf("algorithms: %s is not an HMAC algorithm, and a secret verifies only HS256/HS384/HS512", alg))
		case hmac && len(c.Secret) < hmacKeyBytes[alg]:
			errs = append(errs, fmt.Errorf("algorithms: %s needs a secret of at least %d bytes", alg, hmacKeyBytes[alg]))
		}
	}
	return errors.Join(errs...)
}

// checkJWKSURL accepts https URLs, and http ones to loopback hosts only: keys fetched over
// plain HTTP from elsewhere could be anyone's.
func checkJWKSURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	switch {
	case u.Host == "":
		return errors.New("not an absolute URL")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		return nil
	default:
		return errors.New("must be https (http only to a loopback host)")
	}
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func validateAPIKeys(keys []APIKeyConfig) error {
	var errs []error
	names, hashes := map[string]bool{}, map[string]bool{}
	for i, k := range keys {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("api_keys[%d] (%s): %s", i, k.Name, fmt.Sprintf(format, args...)))
		}
		if k.Name == "" {
			bad("name is required")
		}
		if names[k.Name] {
			bad("name is used twice")
		}
		names[k.Name] = true
		if _, err := parseKeyHash(k.Hash); err != nil {
			bad("hash: %v", err)
		} else if hashes[strings.ToLower(k.Hash)] {
			bad("hash: the same key is configured twice")
		}
		hashes[strings.ToLower(k.Hash)] = true
	}
	return errors.Join(errs...)
}

// parseKeyHash decodes "sha256:<64 hex digits>".
func parseKeyHash(s string) ([32]byte, error) {
	var sum [32]byte
	digits, ok := strings.CutPrefix(s, apiKeyHashPrefix)
	if !ok {
		return sum, errors.New(`must be "sha256:" followed by 64 hex digits (printf %s "$KEY" | sha256sum)`)
	}
	n, err := hex.Decode(sum[:], []byte(digits))
	if err != nil || n != len(sum) || len(digits) != 2*len(sum) {
		return sum, errors.New("the SHA-256 must be 64 hex digits")
	}
	return sum, nil
}

// withDefaults returns c with every zero setting at its default.
func (c IssuerConfig) withDefaults() IssuerConfig {
	if c.Leeway == 0 {
		c.Leeway = DefaultLeeway
	}
	if c.RefreshInterval == 0 {
		c.RefreshInterval = DefaultRefreshInterval
	}
	if c.RefreshRateLimit == 0 {
		c.RefreshRateLimit = DefaultRefreshRateLimit
	}
	if c.MaxTokenBytes == 0 {
		c.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if len(c.ScopeClaims) == 0 {
		c.ScopeClaims = defaultScopeClaims
	}
	return c
}
