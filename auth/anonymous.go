package auth

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Config is the auth section of the configuration file. With no method configured every
// call fails with AUTHENTICATION_FAILED: the gateway never serves without a decision.
type Config struct {
	// Anonymous admits callers that present no credential.
	Anonymous *AnonymousConfig `yaml:"anonymous" json:"anonymous,omitempty"`
}

// AnonymousConfig configures anonymous access.
type AnonymousConfig struct {
	// LoopbackOnly admits anonymous callers only from loopback addresses (default true).
	LoopbackOnly *bool `yaml:"loopback_only" json:"loopback_only,omitempty"`
	// Tier is the client tier anonymous callers get (default "standard").
	Tier string `yaml:"tier" json:"tier,omitempty"`
	// Scopes are the scopes anonymous callers hold.
	Scopes []string `yaml:"scopes" json:"scopes,omitempty"`
}

// DefaultTier is the tier of callers whose credential names none.
const DefaultTier = "standard"

// New returns the authenticator for cfg.
func New(cfg Config) gateway.Authenticator {
	a := &authenticator{}
	if c := cfg.Anonymous; c != nil {
		a.anonymous = true
		a.loopbackOnly = c.LoopbackOnly == nil || *c.LoopbackOnly
		a.principal = gateway.Principal{Subject: "anonymous", Tier: c.Tier, Scopes: c.Scopes, Anonymous: true}
		if a.principal.Tier == "" {
			a.principal.Tier = DefaultTier
		}
	}
	return a
}

type authenticator struct {
	anonymous    bool
	loopbackOnly bool
	principal    gateway.Principal
}

var _ gateway.Authenticator = (*authenticator)(nil)

// Authenticate implements gateway.Authenticator.
func (a *authenticator) Authenticate(_ context.Context, creds gateway.Credentials) (gateway.Principal, error) {
	if creds.Bearer != "" || creds.APIKey != "" {
		return gateway.Principal{}, errNoVerifier
	}
	if !a.anonymous {
		return gateway.Principal{}, errNoCredential
	}
	if a.loopbackOnly && !creds.Remote.Addr().Unmap().IsLoopback() {
		return gateway.Principal{}, errNotLoopback
	}
	return a.principal, nil
}

var (
	errNoCredential = gateway.Errorf(schemas.CodeAuthentication, "Authentication failed: no credential presented")
	errNoVerifier   = gateway.Errorf(schemas.CodeAuthentication, "Authentication failed: this gateway verifies no credentials")
	errNotLoopback  = gateway.Errorf(schemas.CodeAuthentication, "Authentication failed: anonymous access is allowed from loopback only")
)
