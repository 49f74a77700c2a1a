package auth

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// HopRequest is the token to mint for one hop a call makes to a backend.
type HopRequest struct {
	// Caller is the authenticated caller the hop runs on behalf of: its subject becomes
	// sub, its scopes are narrowed, and an act claim on its own token is nested under the
	// gateway's (RFC 8693 §4.1: the chain of actors, the most recent outermost).
	Caller gateway.Principal
	// Audience is the target: the aud claim.
	Audience string
	// Required are the scopes the rule that let the call through requires (policy's
	// Decision.Scopes); the token carries the caller's scopes among them and no other.
	Required []string
	// Deadline is the call's absolute deadline; the token expires no later (zero: none).
	Deadline time.Time
}

// ErrHopExpired is MintHop's error for a call whose deadline has already passed.
var ErrHopExpired = errors.New("minting: the call's deadline has passed")

// MintHop mints the downstream token of one hop: sub = the caller, act = the ring's issuer
// (the gateway), aud = the target, scopes = Narrow(caller's, required), lifetime =
// min(remaining deadline, the ring's max_token_ttl), a fresh jti. The scopes never widen:
// a hop made by a caller who is itself a hop's holder carries a subset of that hop's.
func (r *KeyRing) MintHop(ctx context.Context, req HopRequest) (Minted, error) {
	ttl := r.cfg.MaxTokenTTL
	if !req.Deadline.IsZero() {
		rem := req.Deadline.Sub(r.now())
		if rem <= 0 {
			return Minted{}, ErrHopExpired
		}
		ttl = min(ttl, rem)
	}
	mr := MintRequest{
		Subject:  req.Caller.Subject,
		Actor:    r.cfg.Issuer,
		Audience: []string{req.Audience},
		Scopes:   Narrow(req.Caller.Scopes, req.Required),
		TTL:      ttl,
	}
	if prior, ok := req.Caller.Claims[claimAct].(map[string]any); ok {
		mr.PriorActor = prior
	}
	return r.Mint(ctx, mr)
}

// Narrow returns the scopes in both have and want, in want's order and without repeats:
// what a downstream token may carry for a hop whose rule requires want, made on behalf of
// a caller holding have. The result is a subset of each, so narrowing hop after hop can
// only shrink a caller's authority (Σ” ⊆ Σ' ⊆ Σ). Nil when nothing is shared.
func Narrow(have, want []string) []string {
	var out []string
	for _, s := range want {
		if slices.Contains(have, s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
