package auth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// SignJWS signs payload as a JWS (RFC 7515) with the ring's current key and returns its
// two signed parts, base64url: the protected header — header plus the alg and kid of the
// key, which header may not set — and the signature over
// BASE64URL(protected) '.' BASE64URL(payload). The payload itself is the caller's to
// carry or to leave detached (an A2A card signature).
func (r *KeyRing) SignJWS(header map[string]any, payload []byte) (protected, signature string, err error) {
	return r.current(r.now()).signer.SignJWS(header, payload)
}

// SignJWS signs payload as a JWS with the Signer's key (see KeyRing.SignJWS).
func (s *Signer) SignJWS(header map[string]any, payload []byte) (protected, signature string, err error) {
	h := make(map[string]any, len(header)+2)
	for k, v := range header {
		if slices.Contains([]string{"alg", "kid"}, k) {
			return "", "", fmt.Errorf("signing: header member %q is the key's", k)
		}
		h[k] = v
	}
	h["alg"], h["kid"] = s.method.Alg(), s.kid
	hb, err := json.Marshal(h)
	if err != nil {
		return "", "", fmt.Errorf("signing: header: %w", err)
	}
	if payload == nil {
		return "", "", errors.New("signing: no payload")
	}
	b64 := base64.RawURLEncoding.EncodeToString
	protected = b64(hb)
	sig, err := s.method.Sign(protected+"."+b64(payload), s.key)
	if err != nil {
		return "", "", fmt.Errorf("signing: %w", err)
	}
	return protected, b64(sig), nil
}
