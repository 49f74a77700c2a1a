package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/MicahParks/jwkset"
)

// verifyKey is one key a signature may be verified with, and the algorithms it is pinned to.
type verifyKey struct {
	kid        string
	key        any // *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey, or []byte (HMAC)
	algorithms []string
}

// keySource finds an issuer's verification keys.
type keySource interface {
	// lookup returns the keys a token with key id kid ("" when the header has none) may be
	// verified with, or errUnknownKey. It never fetches anything a token names.
	lookup(ctx context.Context, kid string) ([]verifyKey, error)
}

// staticKeys are keys read once from configuration: PEM files, a JWKS file or a secret.
type staticKeys struct {
	keys []verifyKey
	// anyKID makes every key a candidate whatever the kid: a secret has no key id.
	anyKID bool
}

var _ keySource = (*staticKeys)(nil)

// lookup returns the key with the token's kid; a token without kid may be verified with
// any of the keys.
func (s *staticKeys) lookup(_ context.Context, kid string) ([]verifyKey, error) {
	if kid == "" || s.anyKID {
		return s.keys, nil
	}
	for i := range s.keys {
		if s.keys[i].kid == kid {
			return s.keys[i : i+1], nil
		}
	}
	return nil, errUnknownKey
}

// algorithms returns every algorithm some key may verify, in a stable order.
func algorithmsOf(keys []verifyKey) []string {
	var out []string
	for _, k := range keys {
		for _, alg := range k.algorithms {
			if !slices.Contains(out, alg) {
				out = append(out, alg)
			}
		}
	}
	return out
}

// secretKeys is the key source of a shared secret.
func secretKeys(secret string, configured []string) *staticKeys {
	key := []byte(secret)
	return &staticKeys{anyKID: true, keys: []verifyKey{{key: key, algorithms: keyAlgorithms(key, configured, "")}}}
}

// pemKeys reads public keys from PEM files; each key's id is its RFC 7638 thumbprint.
func pemKeys(files, configured []string) (*staticKeys, error) {
	s := &staticKeys{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("pem_files: %w", err)
		}
		keys, err := parsePublicKeysPEM(data)
		if err != nil {
			return nil, fmt.Errorf("pem_files: %s: %w", f, err)
		}
		for _, key := range keys {
			kid, err := Thumbprint(key)
			if err != nil {
				return nil, fmt.Errorf("pem_files: %s: %w", f, err)
			}
			if err := s.add(verifyKey{kid: kid, key: key, algorithms: keyAlgorithms(key, configured, "")}); err != nil {
				return nil, fmt.Errorf("pem_files: %s: %w", f, err)
			}
		}
	}
	return s, nil
}

// jwksFileKeys reads a JWK Set file of public keys.
func jwksFileKeys(file string, configured []string) (*staticKeys, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("jwks_file: %w", err)
	}
	var set jwkset.JWKSMarshal
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("jwks_file: %s: not a JWK Set: %w", file, err)
	}
	s := &staticKeys{}
	for i, m := range set.Keys {
		if m.KTY == jwkset.KtyOct {
			return nil, fmt.Errorf("jwks_file: %s: key %d is a symmetric (oct) key: a shared secret goes in secret", file, i)
		}
		jwk, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		if err != nil {
			return nil, fmt.Errorf("jwks_file: %s: key %d: %w", file, i, err)
		}
		k, err := fromJWK(jwk, configured)
		if err != nil {
			return nil, fmt.Errorf("jwks_file: %s: key %d: %w", file, i, err)
		}
		if err := s.add(k); err != nil {
			return nil, fmt.Errorf("jwks_file: %s: %w", file, err)
		}
	}
	if len(s.keys) == 0 {
		return nil, fmt.Errorf("jwks_file: %s: no signature keys", file)
	}
	return s, nil
}

// add appends k, refusing a duplicate key id and a key allowed no algorithm.
func (s *staticKeys) add(k verifyKey) error {
	if len(k.algorithms) == 0 {
		return fmt.Errorf("key %q: no configured algorithm fits this %s key", k.kid, keyKind(k.key))
	}
	if k.kid != "" && slices.ContainsFunc(s.keys, func(o verifyKey) bool { return o.kid == k.kid }) {
		return fmt.Errorf("key id %q is used twice", k.kid)
	}
	s.keys = append(s.keys, k)
	return nil
}

// fromJWK converts a JWK into a verification key. Keys not meant for signatures (use other
// than "sig", key_ops without "verify") and symmetric keys are refused: a symmetric key in
// a published key set is known to everyone.
func fromJWK(jwk jwkset.JWK, configured []string) (verifyKey, error) {
	m := jwk.Marshal()
	if m.USE != "" && m.USE != jwkset.UseSig {
		return verifyKey{}, fmt.Errorf("use is %q, not sig", m.USE)
	}
	if len(m.KEYOPS) > 0 && !slices.Contains(m.KEYOPS, jwkset.KeyOpsVerify) {
		return verifyKey{}, errors.New("key_ops does not allow verify")
	}
	if _, symmetric := jwk.Key().([]byte); symmetric {
		return verifyKey{}, errors.New("a symmetric key is never taken from a key set")
	}
	key, err := publicKeyOf(jwk.Key())
	if err != nil {
		return verifyKey{}, err
	}
	return verifyKey{kid: m.KID, key: key, algorithms: keyAlgorithms(key, configured, string(m.ALG))}, nil
}

// keyKind names a key's type for messages.
func keyKind(key any) string {
	switch key.(type) {
	case *rsa.PublicKey:
		return "RSA"
	case *ecdsa.PublicKey:
		return "EC"
	case ed25519.PublicKey:
		return "Ed25519"
	default:
		return "secret"
	}
}
