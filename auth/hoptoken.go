package auth

import (
	"context"
	"errors"

	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// NewHopTokenStage returns the hop-token stage: the last before dispatch, it puts in the
// context the credential the routed target sends its backend (gateway.WithHopToken),
// chosen by the target's downstream_token mode (gateway.HopAuthenticated):
//
//   - mint: a token the key ring ring returns signs for this hop — sub = the caller, act =
//     the gateway, aud = the target's audience, scopes = the caller's ∩ those the policy
//     rule that let the call through requires (policy.DecisionFrom; none without a
//     policy), lifetime = min(the call's remaining deadline, the ring's max_token_ttl), a
//     fresh jti. Without a key ring (ring returns nil: no auth.keyring section) nothing
//     is minted and the hop carries no credential;
//   - passthrough: the caller's own bearer token, unchanged (none for callers without one);
//   - none: no credential.
//
// Targets inside the gateway (built-ins, NEKTE) make no hop and get none, which also keeps
// a call nested in another from inheriting its parent's credential. minted, when not nil,
// is called once per token minted (the server counts gatehouse_tokens_minted_total).
func NewHopTokenStage(ring func() *KeyRing, minted func()) gateway.Middleware {
	return func(next gateway.Handler) gateway.Handler {
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			tok, err := hopToken(ctx, ring, call, minted)
			if err != nil {
				return nil, err
			}
			if tok == "" && gateway.HopToken(ctx) == "" {
				return next(ctx, call) // nothing to carry, nothing to clear
			}
			return next(gateway.WithHopTokenFor(ctx, call, tok), call)
		}
	}
}

// hopToken returns the credential call's hop carries, "" for none.
func hopToken(ctx context.Context, ring func() *KeyRing, call *gateway.Call, minted func()) (string, error) {
	t, ok := call.Target.(gateway.HopAuthenticated)
	if !ok {
		return "", nil
	}
	hop := t.HopAuth(call)
	switch hop.Mode {
	case gateway.HopPassthrough:
		return call.Principal.Bearer, nil
	case gateway.HopMint:
	default:
		return "", nil
	}
	r := ring()
	if r == nil || hop.Audience == "" || call.Principal.Subject == "" {
		return "", nil
	}
	d, _ := policy.DecisionFrom(ctx)
	m, err := r.MintHop(ctx, HopRequest{Caller: call.Principal, Audience: hop.Audience, Required: d.Scopes, Deadline: call.Deadline})
	switch {
	case errors.Is(err, ErrHopExpired):
		return "", gateway.NewError(schemas.CodeDeadlineExceeded)
	case err != nil:
		return "", gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	if minted != nil {
		minted()
	}
	return m.Token, nil
}
