package auth

import "github.com/gatehouse-dev/gatehouse/gateway"

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

// anonymous admits callers without a credential, as configured.
type anonymous struct {
	loopbackOnly bool
	principal    gateway.Principal
}

// newAnonymous returns the anonymous admission of c, nil when c is nil (anonymous access off).
func newAnonymous(c *AnonymousConfig) *anonymous {
	if c == nil {
		return nil
	}
	a := &anonymous{
		loopbackOnly: c.LoopbackOnly == nil || *c.LoopbackOnly,
		principal:    gateway.Principal{Subject: "anonymous", Tier: c.Tier, Scopes: c.Scopes, Anonymous: true},
	}
	if a.principal.Tier == "" {
		a.principal.Tier = DefaultTier
	}
	return a
}

// admit returns the anonymous principal for a caller that presented no credential.
func (a *anonymous) admit(creds gateway.Credentials) (gateway.Principal, error) {
	if a == nil {
		return gateway.Principal{}, refuse(ReasonNoCredential)
	}
	if a.loopbackOnly && !creds.Remote.Addr().Unmap().IsLoopback() {
		return gateway.Principal{}, refuse(ReasonNotLoopback)
	}
	return a.principal, nil
}
