package auth

import (
	"crypto"
	"errors"
	"fmt"

	"github.com/golang-jwt/jwt/v5"
)

// Signer signs JWTs with one private key, under one key id, with the algorithm of the
// key's type (AlgorithmFor). It is safe for concurrent use.
type Signer struct {
	key    crypto.Signer
	kid    string
	method jwt.SigningMethod
}

// NewSigner returns a Signer for key; an empty kid is replaced by the key's RFC 7638
// thumbprint.
func NewSigner(key crypto.Signer, kid string) (*Signer, error) {
	alg, err := AlgorithmFor(key.Public())
	if err != nil {
		return nil, err
	}
	if kid == "" {
		if kid, err = Thumbprint(key.Public()); err != nil {
			return nil, err
		}
	}
	return &Signer{key: key, kid: kid, method: jwt.GetSigningMethod(alg)}, nil
}

// KeyID returns the kid the Signer puts in the header of what it signs.
func (s *Signer) KeyID() string { return s.kid }

// Algorithm returns the JWS algorithm the Signer signs with.
func (s *Signer) Algorithm() string { return s.method.Alg() }

// Public returns the public key of the Signer.
func (s *Signer) Public() crypto.PublicKey { return s.key.Public() }

// Sign returns the compact JWS of claims, with the header {"alg", "kid", "typ": "JWT"}.
// It signs exactly the claims given: setting exp, iat and the rest is the caller's job.
func (s *Signer) Sign(claims map[string]any) (string, error) {
	if claims == nil {
		return "", errors.New("signing: no claims")
	}
	t := jwt.NewWithClaims(s.method, jwt.MapClaims(claims))
	t.Header["kid"] = s.kid
	out, err := t.SignedString(s.key)
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	return out, nil
}
