// Package hoptest is a backend's side of the gateway's downstream tokens, for the tests
// that prove them end to end: a Verifier checks a hop token the way a third-party backend
// would, with golang-jwt and a JWKS client (keyfunc) fetching the gateway's published
// /.well-known/jwks.json, and nothing of the gateway's own auth code.
package hoptest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// Claims are the claims of a verified hop token that the tests check.
type Claims struct {
	Subject  string         `json:"sub"`
	Audience []string       `json:"aud"`
	Scopes   []string       `json:"scopes"`
	ID       string         `json:"jti"`
	Actor    map[string]any `json:"act"`
	KeyID    string         `json:"kid"`
	Lifetime time.Duration  `json:"lifetime"` // exp - iat
}

// Verifier verifies hop tokens of one issuer for one audience.
type Verifier struct {
	kf       keyfunc.Keyfunc
	issuer   string
	audience string
}

// NewVerifier fetches the JWK Set at jwksURL, refreshes it every refresh and, at most ten
// times a second, when a token names a key it does not have, until ctx is done.
func NewVerifier(ctx context.Context, jwksURL, issuer, audience string, refresh time.Duration) (*Verifier, error) {
	kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{jwksURL}, keyfunc.Override{
		RefreshInterval:   refresh,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(100*time.Millisecond), 1),
		RateLimitWaitMax:  time.Second,
		HTTPTimeout:       5 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("hoptest: JWKS %s: %w", jwksURL, err)
	}
	return &Verifier{kf: kf, issuer: issuer, audience: audience}, nil
}

// Verify checks the bearer value ("Bearer <jws>") a hop carried: the signature with a key
// of the published JWK Set (EdDSA or ES256 only), iss, aud, exp, and that sub, jti and act
// are present.
func (v *Verifier) Verify(bearer string) (Claims, error) {
	raw, ok := strings.CutPrefix(bearer, "Bearer ")
	if !ok || raw == "" {
		return Claims{}, errors.New("no bearer token")
	}
	tok, err := jwt.Parse(raw, v.kf.Keyfunc, jwt.WithValidMethods([]string{"EdDSA", "ES256"}),
		jwt.WithIssuer(v.issuer), jwt.WithAudience(v.audience), jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil {
		return Claims{}, err
	}
	mc, _ := tok.Claims.(jwt.MapClaims)
	var c Claims
	c.Subject, _ = mc["sub"].(string)
	c.ID, _ = mc["jti"].(string)
	c.Actor, _ = mc["act"].(map[string]any)
	c.KeyID, _ = tok.Header["kid"].(string)
	c.Audience, _ = mc.GetAudience()
	if s, _ := mc["scope"].(string); s != "" {
		c.Scopes = strings.Fields(s)
	}
	exp, _ := mc.GetExpirationTime()
	iat, _ := mc.GetIssuedAt()
	if exp != nil && iat != nil {
		c.Lifetime = exp.Sub(iat.Time)
	}
	if c.Subject == "" || c.ID == "" || c.Actor == nil {
		return Claims{}, fmt.Errorf("a hop token needs sub, jti and act: %v", mc)
	}
	return c, nil
}
