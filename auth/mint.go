package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MintRequest is a token to mint for a downstream hop. Mint signs what it is given: which
// scopes and audience a hop gets, and for how long, is policy's decision.
type MintRequest struct {
	// Subject is the sub claim: the caller on whose behalf the hop runs. Required.
	Subject string
	// Actor, when set, becomes the act claim {"sub": Actor} (RFC 8693): who acts for the
	// subject, the gateway itself for a hop it makes.
	Actor string
	// Audience is the aud claim: the target of the hop. At least one is required.
	Audience []string
	// Scopes become the scope claim, space-separated; none leaves it out.
	Scopes []string
	// TTL is the token's lifetime: exp = now + TTL, no more than the ring's MaxTokenTTL.
	TTL time.Duration
	// PriorActor is the act claim of the subject's own token when the subject is itself
	// acting for someone (a hop token presented back to the gateway); it is nested inside
	// the new act claim, so the token records the whole chain of actors (RFC 8693 §4.1).
	// Ignored without Actor.
	PriorActor map[string]any
	// ID is the jti claim; empty, a random one (128 bits, base64url).
	ID string
	// Claims are further claims; they may not set the claims above, iss or iat.
	Claims map[string]any
}

// Minted is a token Mint signed.
type Minted struct {
	// Token is the compact JWS.
	Token string
	// ID is its jti.
	ID string
	// Expires is its exp.
	Expires time.Time
}

// mintedClaims are the claims Mint sets, which MintRequest.Claims may not.
var mintedClaims = []string{claimIss, claimSub, claimAud, claimExp, claimIat, claimNbf, claimJti, claimScope, claimScp, claimAct}

// Mint signs a token with the ring's current key: iss = the ring's issuer, sub, aud, scope,
// act, iat = now, exp = now + TTL, jti.
func (r *KeyRing) Mint(_ context.Context, req MintRequest) (Minted, error) {
	claims, err := req.claims()
	if err != nil {
		return Minted{}, err
	}
	if req.TTL <= 0 || req.TTL > r.cfg.MaxTokenTTL {
		return Minted{}, fmt.Errorf("minting: ttl %s is outside (0, %s]", req.TTL, r.cfg.MaxTokenTTL)
	}
	id := req.ID
	if id == "" {
		var b [16]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		id = base64.RawURLEncoding.EncodeToString(b[:])
	}
	now := r.now()
	exp := now.Add(req.TTL).Unix()
	claims[claimIss], claims[claimIat], claims[claimExp], claims[claimJti] = r.cfg.Issuer, now.Unix(), exp, id
	tok, err := r.Sign(claims)
	if err != nil {
		return Minted{}, err
	}
	return Minted{Token: tok, ID: id, Expires: time.Unix(exp, 0)}, nil
}

// claims returns the request's claims but for iss, iat, exp and jti.
func (req MintRequest) claims() (map[string]any, error) {
	if req.Subject == "" {
		return nil, errors.New("minting: a subject is required")
	}
	if len(req.Audience) == 0 || slices.Contains(req.Audience, "") {
		return nil, errors.New("minting: at least one non-empty audience is required")
	}
	claims := make(map[string]any, len(req.Claims)+8)
	for name, v := range req.Claims {
		if slices.Contains(mintedClaims, name) {
			return nil, fmt.Errorf("minting: claim %q is set by Mint", name)
		}
		claims[name] = v
	}
	claims[claimSub] = req.Subject
	if len(req.Audience) == 1 {
		claims[claimAud] = req.Audience[0]
	} else {
		claims[claimAud] = slices.Clone(req.Audience)
	}
	if len(req.Scopes) > 0 {
		for _, s := range req.Scopes {
			if s == "" || strings.ContainsAny(s, " \t\n") {
				return nil, fmt.Errorf("minting: scope %q is empty or contains a space", s)
			}
		}
		claims[claimScope] = strings.Join(req.Scopes, " ")
	}
	if req.Actor != "" {
		act := map[string]any{claimSub: req.Actor}
		if req.PriorActor != nil {
			act[claimAct] = req.PriorActor
		}
		claims[claimAct] = act
	}
	return claims, nil
}
