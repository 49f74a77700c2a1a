package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// HopMode says which credential a target receives on the hop the gateway makes to it.
type HopMode uint8

// Hop modes.
const (
	// HopMint gives the target a token the gateway mints for the hop: sub = the caller,
	// act = the gateway, aud = the target, scopes narrowed to what the target's rule
	// requires, lifetime bounded by the call's deadline. The default.
	HopMint HopMode = iota
	// HopPassthrough forwards the caller's own bearer token unchanged; only for a backend
	// whose policy explicitly says so (it trusts the caller's issuer and audience).
	HopPassthrough
	// HopNone sends the target no credential.
	HopNone
)

var hopModeNames = [...]string{"mint", "passthrough", "none"}

// String returns the mode's configuration name.
func (m HopMode) String() string {
	if int(m) < len(hopModeNames) {
		return hopModeNames[m]
	}
	return unknownName
}

// ParseHopMode returns the mode named s ("" is HopMint).
func ParseHopMode(s string) (HopMode, bool) {
	if s == "" {
		return HopMint, true
	}
	for i, n := range hopModeNames {
		if n == s {
			return HopMode(i), true
		}
	}
	return HopMint, false
}

// HopAuth is how a target wants to be authenticated to on one call's hop.
type HopAuth struct {
	// Mode chooses the credential.
	Mode HopMode
	// Audience is the aud of a minted token: the name the target knows itself by.
	Audience string
}

// HopAuthenticated is implemented by targets that make a hop to a backend outside the
// gateway (gRPC backends, MCP upstreams) and so carry a downstream credential. Targets
// that run inside the gateway do not implement it and get none.
type HopAuthenticated interface {
	// HopAuth returns how call's hop is authenticated; for a target that reaches several
	// backends (the MCP bridge), the backend call reaches decides.
	HopAuth(call *Call) HopAuth
}

type hopTokenKey struct{}

// WithHopToken returns ctx carrying bearer, the credential the target a call is dispatched
// to sends on its hop ("" sends none). Each dispatch sets it anew, so a call nested in
// another never inherits its parent's hop credential.
func WithHopToken(ctx context.Context, bearer string) context.Context {
	return context.WithValue(ctx, hopTokenKey{}, bearer)
}

// FromCall implements CallKey: a pointer to the call's token (a string would be boxed on
// every lookup).
func (hopTokenKey) FromCall(c *Call, _ context.Context) (any, bool) {
	return &c.vals.hopToken, c.vals.hasHopToken
}

// WithHopTokenFor is WithHopToken for the dispatch of call: when ctx is call's context
// (WithCall) the credential is kept on call and ctx is returned as it is; otherwise it is
// WithHopToken.
func WithHopTokenFor(ctx context.Context, call *Call, bearer string) context.Context {
	if carries(ctx, call) {
		call.vals.hopToken, call.vals.hasHopToken = bearer, true
		return ctx
	}
	return WithHopToken(ctx, bearer)
}

// HopToken returns the credential WithHopToken put in ctx, "" for none. Targets send it as
// a bearer token (gRPC metadata authorization, HTTP Authorization, an MCP request's _meta)
// and never log it.
func HopToken(ctx context.Context) string {
	switch s := ctx.Value(hopTokenKey{}).(type) {
	case string:
		return s
	case *string:
		return *s
	}
	return ""
}

// DownstreamTokenConfig is a backend's downstream_token section: which credential it
// receives on each call's hop. Absent, the backend gets a token minted for it.
type DownstreamTokenConfig struct {
	// Mode is "mint" (the default: a token the gateway mints for the hop, aud = Audience),
	// "passthrough" (the caller's own bearer token, unchanged; only for a backend that
	// trusts the caller's issuer and audience) or "none" (no credential).
	Mode string `yaml:"mode" json:"mode,omitempty"`
	// Audience is the aud of the tokens minted for this backend (default: the backend's
	// name). It is only meaningful, and only accepted, with mode mint.
	Audience string `yaml:"audience" json:"audience,omitempty"`
}

// maxAudienceBytes bounds a configured audience.
const maxAudienceBytes = 256

// Validate checks the section: a known mode, and an audience only where one is used.
func (d DownstreamTokenConfig) Validate() error {
	mode, ok := ParseHopMode(d.Mode)
	if !ok {
		return fmt.Errorf("downstream_token.mode: %q is not one of mint, passthrough, none", d.Mode)
	}
	if d.Audience == "" {
		return nil
	}
	if mode != HopMint {
		return fmt.Errorf("downstream_token.audience is set but mode is %s: only minted tokens have an audience", mode)
	}
	if len(d.Audience) > maxAudienceBytes || strings.IndexFunc(d.Audience, notAudienceRune) >= 0 {
		return errors.New("downstream_token.audience must be at most 256 bytes of printable characters without spaces")
	}
	return nil
}

// notAudienceRune reports a rune an audience may not contain.
func notAudienceRune(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }

// HopAuth returns the hop authentication of a validated section for the backend named
// name, its default audience.
func (d DownstreamTokenConfig) HopAuth(name string) HopAuth {
	mode, _ := ParseHopMode(d.Mode)
	if mode != HopMint {
		return HopAuth{Mode: mode}
	}
	aud := d.Audience
	if aud == "" {
		aud = name
	}
	return HopAuth{Mode: mode, Audience: aud}
}
