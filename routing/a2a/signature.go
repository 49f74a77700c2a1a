package a2a

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse-dev/gatehouse/codecs/canonical"
)

// A card's signatures (A2A 1.0, AgentCardSignature) are JWS in the flattened JSON
// serialization with a detached payload: {protected, signature, header?}. The payload is
// the RFC 8785 canonical JSON of the card without its signatures member
// (codecs/canonical), so the JWS signing input is
// protected + "." + base64url(canonical card). A card verifies when one of its signatures
// verifies with a key of the agent's JWKS (by kid when the protected header names one,
// else any key of a matching type).

// Errors of card verification; ErrCardSignature is in the chain of every one.
var (
	ErrCardSignature = errors.New("card signature")
	errUnsigned      = fmt.Errorf("%w: the card is not signed and card_signature.require_signed_card is set", ErrCardSignature)
)

// cardSignature is one entry of a card's signatures.
type cardSignature struct {
	Protected string          `json:"protected"`
	Signature string          `json:"signature"`
	Header    json.RawMessage `json:"header,omitempty"`
}

// protectedHeader is what a signature's protected header says.
type protectedHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}

// signedPayload splits a card's raw JSON into its signatures and the canonical JSON of the
// rest (the detached payload).
func signedPayload(raw []byte) ([]cardSignature, []byte, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, nil, fmt.Errorf("the card is not a JSON object: %w", err)
	}
	var sigs []cardSignature
	if s, ok := members["signatures"]; ok {
		if err := json.Unmarshal(s, &sigs); err != nil {
			return nil, nil, fmt.Errorf("%w: signatures is not a list of JWS objects", ErrCardSignature)
		}
		delete(members, "signatures")
	}
	rest, err := json.Marshal(members)
	if err != nil {
		return nil, nil, err
	}
	payload, err := canonical.CanonicalJSON(rest)
	if err != nil {
		return nil, nil, fmt.Errorf("the card has no canonical form: %w", err)
	}
	return sigs, payload, nil
}

// verifyCard checks raw's signatures against keys: a signed card must have one that
// verifies (signed is then true), and an unsigned one is refused when required. Without
// keys (none configured, so required is not set: Validate) a card is not verified.
func verifyCard(raw []byte, keys []jwk, required bool) (signed bool, err error) {
	sigs, payload, err := signedPayload(raw)
	if err != nil {
		return false, err
	}
	if len(sigs) == 0 {
		if required {
			return false, errUnsigned
		}
		return false, nil
	}
	if keys == nil {
		return true, nil // signed, but no keys configured: nothing to verify against
	}
	encoded := base64.RawURLEncoding.EncodeToString(payload)
	var last error
	for i, s := range sigs {
		if err := verifyOne(s, encoded, keys); err != nil {
			last = fmt.Errorf("signature %d: %w", i, err)
			continue
		}
		return true, nil
	}
	return true, fmt.Errorf("%w: no signature verifies with the configured keys (%w)", ErrCardSignature, last)
}

func verifyOne(s cardSignature, payload string, keys []jwk) error {
	hdrJSON, err := base64.RawURLEncoding.DecodeString(s.Protected)
	if err != nil {
		return errors.New("protected header is not base64url")
	}
	var h protectedHeader
	if err := json.Unmarshal(hdrJSON, &h); err != nil {
		return errors.New("protected header is not a JSON object")
	}
	method := jwt.GetSigningMethod(h.Alg)
	if method == nil || h.Alg == "none" || h.Alg[0] == 'H' {
		return fmt.Errorf("algorithm %q is not accepted", h.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(s.Signature)
	if err != nil {
		return errors.New("signature is not base64url")
	}
	input := s.Protected + "." + payload
	tried := false
	for _, k := range keys {
		if h.Kid != "" && k.kid != h.Kid {
			continue
		}
		if !k.fits(h.Alg) {
			continue
		}
		tried = true
		if method.Verify(input, sig, k.key) == nil {
			return nil
		}
	}
	if !tried {
		return fmt.Errorf("no configured key matches kid %q and alg %s", h.Kid, h.Alg)
	}
	return errors.New("the signature does not verify (the card was changed after signing, or signed with another key)")
}

// jwk is one public key of a JWKS.
type jwk struct {
	kid string
	key crypto.PublicKey
}

// fits reports whether the key's type can verify alg.
func (k jwk) fits(alg string) bool {
	switch k.key.(type) {
	case *ecdsa.PublicKey:
		return alg[:2] == "ES"
	case *rsa.PublicKey:
		return alg[:2] == "RS" || alg[:2] == "PS"
	case ed25519.PublicKey:
		return alg == "EdDSA" || alg == "Ed25519"
	}
	return false
}

// parseJWKS reads a JWKS's public keys; keys of an unknown type are skipped, and a set
// with none usable is an error.
func parseJWKS(raw []byte) ([]jwk, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
			N   string `json:"n"`
			E   string `json:"e"`
			Use string `json:"use"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	var out []jwk
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		var key crypto.PublicKey
		switch k.Kty {
		case "EC":
			curve := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}[k.Crv]
			if curve == nil {
				continue
			}
			size := (curve.Params().BitSize + 7) / 8
			x, ex := base64.RawURLEncoding.DecodeString(k.X)
			y, ey := base64.RawURLEncoding.DecodeString(k.Y)
			if ex != nil || ey != nil || len(x) != size || len(y) != size {
				continue
			}
			pk, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
			if err != nil {
				continue // not a point of the curve
			}
			key = pk
		case "RSA":
			n, en := b64int(k.N)
			e, ee := b64int(k.E)
			if en != nil || ee != nil || !e.IsInt64() || n.BitLen() < 2048 {
				continue
			}
			key = &rsa.PublicKey{N: n, E: int(e.Int64())}
		case "OKP":
			x, err := base64.RawURLEncoding.DecodeString(k.X)
			if k.Crv != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
				continue
			}
			key = ed25519.PublicKey(x)
		default:
			continue
		}
		out = append(out, jwk{kid: k.Kid, key: key})
	}
	if len(out) == 0 {
		return nil, errors.New("JWKS: no usable signing key (EC P-256/384/521, RSA ≥ 2048 bits, Ed25519)")
	}
	return out, nil
}

func b64int(s string) (*big.Int, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil, errors.New("bad integer")
	}
	return new(big.Int).SetBytes(b), nil
}
