package a2a

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/tlsclient"
)

// Config is one upstream A2A agent (an entry of routing.a2a.agents).
type Config struct {
	// Name identifies the agent in logs, errors, metrics and readiness; its backend is
	// BackendPrefix + Name.
	Name string `yaml:"name" json:"name"`
	// CardURL is where the agent's card is fetched: its base URL (the card is then at
	// /.well-known/agent-card.json under it) or the card's own URL.
	CardURL string `yaml:"card_url" json:"card_url"`
	// Prefix is put before each skill's id to make its capability id and JSON-RPC method
	// (default "a2a.<name>.").
	Prefix string `yaml:"prefix" json:"prefix,omitempty"`
	// DownstreamToken is the credential the agent receives on each call, in the
	// Authorization header (default: a token minted for it, aud = the agent's name).
	DownstreamToken gateway.DownstreamTokenConfig `yaml:"downstream_token" json:"downstream_token"`
	// AllowPlaintextHopToken lets a hop credential go to a plain http:// agent that is not
	// on loopback.
	AllowPlaintextHopToken bool `yaml:"allow_plaintext_hop_token" json:"allow_plaintext_hop_token,omitempty"`
	// TLS verifies the agent's certificate (and presents the gateway's, for mTLS).
	TLS *tlsclient.Config `yaml:"tls" json:"tls,omitempty"`
	// RequestTimeout bounds one call when the caller's deadline, less the hop reserve, is
	// later or absent (default 60s).
	RequestTimeout time.Duration `yaml:"request_timeout" json:"request_timeout,omitempty"`
	// CardTimeout bounds fetching the card (and the JWKS) (default 10s).
	CardTimeout time.Duration `yaml:"card_timeout" json:"card_timeout,omitempty"`
	// CardRefresh is how often the card is fetched again (default 5m; the card the agent
	// served last keeps serving when a refresh fails).
	CardRefresh time.Duration `yaml:"card_refresh" json:"card_refresh,omitempty"`
	// CancelTimeout bounds the CancelTask sent when a call is cancelled (default 5s).
	CancelTimeout time.Duration `yaml:"cancel_timeout" json:"cancel_timeout,omitempty"`
	// MaxCardBytes bounds the card (and the JWKS) (default 1 MiB).
	MaxCardBytes int64 `yaml:"max_card_bytes" json:"max_card_bytes,omitempty"`
	// MaxResponseBytes bounds one response of the agent, or one event of its stream
	// (default 4 MiB).
	MaxResponseBytes int64 `yaml:"max_response_bytes" json:"max_response_bytes,omitempty"`
	// MaxSkills bounds the skills taken from the card (default 256; more are refused).
	MaxSkills int `yaml:"max_skills" json:"max_skills,omitempty"`
	// CardSignature verifies the card's JWS signatures.
	CardSignature SignatureConfig `yaml:"card_signature" json:"card_signature"`
}

// SignatureConfig says how an agent's card signatures are verified.
type SignatureConfig struct {
	// JWKSURL and JWKSFile name the keys the card must be signed with (at most one).
	JWKSURL  string `yaml:"jwks_url" json:"jwks_url,omitempty"`
	JWKSFile string `yaml:"jwks_file" json:"jwks_file,omitempty"`
	// RequireSignedCard refuses a card without a signature that verifies. Without it, an
	// unsigned card is accepted, and a signed one is verified when keys are configured.
	RequireSignedCard bool `yaml:"require_signed_card" json:"require_signed_card,omitempty"`
}

// BackendPrefix is put before an agent's name to make its backend name (breakers,
// admission, metrics).
const BackendPrefix = "a2a/"

// Defaults.
const (
	DefaultRequestTimeout   = 60 * time.Second
	DefaultCardTimeout      = 10 * time.Second
	DefaultCardRefresh      = 5 * time.Minute
	DefaultCancelTimeout    = 5 * time.Second
	DefaultMaxCardBytes     = 1 << 20
	DefaultMaxResponseBytes = 4 << 20
	DefaultMaxSkills        = 256
)

// WithDefaults returns c with every unset limit at its default.
func (c Config) WithDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = "a2a." + c.Name + "."
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.RequestTimeout, DefaultRequestTimeout)
	def(&c.CardTimeout, DefaultCardTimeout)
	def(&c.CardRefresh, DefaultCardRefresh)
	def(&c.CancelTimeout, DefaultCancelTimeout)
	if c.MaxCardBytes == 0 {
		c.MaxCardBytes = DefaultMaxCardBytes
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.MaxSkills == 0 {
		c.MaxSkills = DefaultMaxSkills
	}
	return c
}

// Validate checks one agent's section.
func (c Config) Validate() error {
	if c.Name == "" || strings.ContainsAny(c.Name, " /\t\n") {
		return fmt.Errorf("a2a agent name %q: must be non-empty, without spaces or slashes", c.Name)
	}
	if err := checkURL("card_url", c.CardURL); err != nil {
		return fmt.Errorf("a2a agent %q: %w", c.Name, err)
	}
	if err := c.DownstreamToken.Validate(); err != nil {
		return fmt.Errorf("a2a agent %q: %w", c.Name, err)
	}
	if err := c.checkPlaintextHop(); err != nil {
		return fmt.Errorf("a2a agent %q: %w", c.Name, err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"request_timeout", c.RequestTimeout}, {"card_timeout", c.CardTimeout}, {"card_refresh", c.CardRefresh}, {"cancel_timeout", c.CancelTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("a2a agent %q: %s must not be negative", c.Name, d.name)
		}
	}
	if c.CardRefresh != 0 && c.CardRefresh < time.Second {
		return fmt.Errorf("a2a agent %q: card_refresh must be at least 1s", c.Name)
	}
	if c.MaxCardBytes < 0 || c.MaxResponseBytes < 0 || c.MaxSkills < 0 {
		return fmt.Errorf("a2a agent %q: max_card_bytes, max_response_bytes and max_skills must not be negative", c.Name)
	}
	s := c.CardSignature
	if s.JWKSURL != "" && s.JWKSFile != "" {
		return fmt.Errorf("a2a agent %q: card_signature: set jwks_url or jwks_file, not both", c.Name)
	}
	if s.JWKSURL != "" {
		if err := checkURL("card_signature.jwks_url", s.JWKSURL); err != nil {
			return fmt.Errorf("a2a agent %q: %w", c.Name, err)
		}
	}
	if s.RequireSignedCard && s.JWKSURL == "" && s.JWKSFile == "" {
		return fmt.Errorf("a2a agent %q: card_signature.require_signed_card needs jwks_url or jwks_file", c.Name)
	}
	return nil
}

// ValidateAll checks every agent and that names and prefixes are unique.
func ValidateAll(agents []Config) error {
	names, prefixes := map[string]bool{}, map[string]bool{}
	var errs []error
	for _, c := range agents {
		if err := c.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		p := c.WithDefaults().Prefix
		if names[c.Name] {
			errs = append(errs, fmt.Errorf("two a2a agents are named %q", c.Name))
		}
		if prefixes[p] {
			errs = append(errs, fmt.Errorf("two a2a agents have the prefix %q", p))
		}
		names[c.Name], prefixes[p] = true, true
	}
	return errors.Join(errs...)
}

func checkURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q: must be an http:// or https:// URL", field, raw)
	}
	if u.User != nil {
		return fmt.Errorf("%s: must not carry credentials", field)
	}
	return nil
}

// checkPlaintextHop refuses a plain http:// agent off loopback that would receive a hop
// credential in the clear, unless allow_plaintext_hop_token is set (the rule of MCP
// upstreams).
func (c Config) checkPlaintextHop() error {
	if c.AllowPlaintextHopToken {
		return nil
	}
	if mode, _ := gateway.ParseHopMode(c.DownstreamToken.Mode); mode == gateway.HopNone {
		return nil
	}
	u, err := url.Parse(c.CardURL)
	if err != nil || u.Scheme != "http" || isLoopback(u.Hostname()) {
		return nil //nolint:nilerr // checkURL refuses a URL that does not parse
	}
	return fmt.Errorf("card_url %s is plain http to a host that is not loopback, and the hop token would go over it in the clear: "+
		"use https://, set downstream_token.mode: none, or set allow_plaintext_hop_token: true if the network path is trusted", u.Redacted())
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
