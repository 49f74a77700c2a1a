package a2a

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	_ "crypto/sha256" // the hashes of the algorithms
	_ "crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"strings"
)

// KeySet is a set of public keys by key id, read from a JWK Set (RFC 7517): what verifies
// a signed agent card or a token a gateway signed.
type KeySet struct {
	keys    map[string]jwk
	unnamed []jwk // keys without a kid, tried for a JWS whose header names none
}

// jwk is one public key of a KeySet and the algorithm it is limited to ("" for any of its
// type).
type jwk struct {
	key any
	alg string
}

// Errors of the JWS functions; every error they return wraps one of them.
var (
	// ErrKeySet is a JWK Set that cannot be read.
	ErrKeySet = errors.New("a2a: invalid JWK set")
	// ErrJWS is a JWS that is malformed, names an unknown key or algorithm, or whose
	// signature does not verify.
	ErrJWS = errors.New("a2a: invalid signature")
)

// maxJWSBytes bounds a JWS part or JWK Set this package reads.
const maxJWSBytes = 64 << 10

// ParseKeySet reads a JWK Set ({"keys": [...]}): OKP Ed25519, EC P-256/P-384/P-521 and
// RSA public keys. Keys of other types and keys meant for encryption ("use": "enc") are
// skipped; a key without a kid verifies only a JWS whose header names no kid. A set with no
// usable key is an error.
func ParseKeySet(jwks []byte) (KeySet, error) {
	if len(jwks) > maxJWSBytes {
		return KeySet{}, fmt.Errorf("%w: larger than %d bytes", ErrKeySet, maxJWSBytes)
	}
	var set struct {
		Keys []struct {
			Kty, Kid, Alg, Use, Crv, X, Y, N, E string
		} `json:"keys"`
	}
	if err := json.Unmarshal(jwks, &set); err != nil {
		return KeySet{}, fmt.Errorf("%w: %w", ErrKeySet, err)
	}
	ks := KeySet{keys: map[string]jwk{}}
	b64 := base64.RawURLEncoding.DecodeString
	for _, k := range set.Keys {
		if k.Use == "enc" {
			continue
		}
		var key any
		switch k.Kty {
		case "OKP":
			x, err := b64(k.X)
			if k.Crv != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
				continue
			}
			key = ed25519.PublicKey(x)
		case "EC":
			curve := curves[k.Crv]
			x, errx := b64(k.X)
			y, erry := b64(k.Y)
			if curve == nil || errx != nil || erry != nil {
				continue
			}
			size := (curve.Params().BitSize + 7) / 8
			if len(x) != size || len(y) != size {
				continue
			}
			pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
			if err != nil {
				continue
			}
			key = pub
		case "RSA":
			n, errn := b64(k.N)
			e, erre := b64(k.E)
			if errn != nil || erre != nil || len(n) < 256 || len(e) == 0 || len(e) > 4 {
				continue // under 2048 bits, or an exponent that does not fit
			}
			key = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		default:
			continue
		}
		if k.Kid == "" {
			ks.unnamed = append(ks.unnamed, jwk{key: key, alg: k.Alg})
			continue
		}
		ks.keys[k.Kid] = jwk{key: key, alg: k.Alg}
	}
	if ks.Len() == 0 {
		return KeySet{}, fmt.Errorf("%w: no usable public key", ErrKeySet)
	}
	return ks, nil
}

var curves = map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}

// Len returns the number of keys of the set.
func (ks KeySet) Len() int { return len(ks.keys) + len(ks.unnamed) }

// JWSHeader is the protected header of a JWS as this package reads it.
type JWSHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ,omitempty"`
	Jku string `json:"jku,omitempty"`
	// Crit names extensions the verifier must understand: any is refused.
	Crit []string `json:"crit,omitempty"`
}

// VerifyJWS verifies the signature (base64url) made with protected (the base64url header)
// over payload (the raw bytes, which the function encodes itself) with the key of ks the
// header's kid names (a header without a kid: with any key of ks the algorithm fits), and
// returns the header. The algorithm must be one this package
// verifies (EdDSA, ES256/384/512, RS256/384/512, PS256/384/512) and fit the key; none and
// HMAC are refused.
func (ks KeySet) VerifyJWS(protected string, payload []byte, signature string) (JWSHeader, error) {
	var h JWSHeader
	if len(protected) > maxJWSBytes || len(signature) > maxJWSBytes {
		return h, fmt.Errorf("%w: too large", ErrJWS)
	}
	hb, err := base64.RawURLEncoding.DecodeString(protected)
	if err != nil {
		return h, fmt.Errorf("%w: protected header is not base64url", ErrJWS)
	}
	if err := json.Unmarshal(hb, &h); err != nil {
		return h, fmt.Errorf("%w: protected header is not a JSON object", ErrJWS)
	}
	if len(h.Crit) > 0 {
		return h, fmt.Errorf("%w: critical header parameters %v are not understood", ErrJWS, h.Crit)
	}
	candidates := ks.unnamed
	if h.Kid != "" {
		k, ok := ks.keys[h.Kid]
		if !ok {
			return h, fmt.Errorf("%w: no key %q in the key set", ErrJWS, h.Kid)
		}
		if k.alg != "" && k.alg != h.Alg {
			return h, fmt.Errorf("%w: key %q is for %s, not %s", ErrJWS, h.Kid, k.alg, h.Alg)
		}
		candidates = []jwk{k}
	} else {
		for _, k := range ks.keys {
			candidates = append(candidates, k)
		}
	}
	sig, err := base64.RawURLEncoding.DecodeString(signature)
	if err != nil {
		return h, fmt.Errorf("%w: signature is not base64url", ErrJWS)
	}
	input := []byte(protected + "." + base64.RawURLEncoding.EncodeToString(payload))
	err = fmt.Errorf("no key in the key set fits %s", h.Alg)
	for _, k := range candidates {
		if k.alg != "" && k.alg != h.Alg {
			continue
		}
		if err = verify(h.Alg, k.key, input, sig); err == nil {
			return h, nil
		}
	}
	return h, fmt.Errorf("%w: %w", ErrJWS, err)
}

// VerifyCompact verifies a compact JWS (a JWT: header.payload.signature) with ks and
// returns its header and decoded payload. It checks the signature only: a JWT's claims
// (exp, iat, aud …) are the caller's to check.
func (ks KeySet) VerifyCompact(token string) (JWSHeader, []byte, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(token) > 3*maxJWSBytes {
		return JWSHeader{}, nil, fmt.Errorf("%w: not a compact JWS", ErrJWS)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return JWSHeader{}, nil, fmt.Errorf("%w: payload is not base64url", ErrJWS)
	}
	h, err := ks.VerifyJWS(parts[0], payload, parts[2])
	if err != nil {
		return h, nil, err
	}
	return h, payload, nil
}

// verify checks sig over input for alg with key.
func verify(alg string, key any, input, sig []byte) error {
	errBad := errors.New("signature does not verify")
	switch k := key.(type) {
	case ed25519.PublicKey:
		if alg != "EdDSA" && alg != "Ed25519" {
			break
		}
		if !ed25519.Verify(k, input, sig) {
			return errBad
		}
		return nil
	case *ecdsa.PublicKey:
		h, want := ecAlgs[alg], ""
		switch k.Curve {
		case elliptic.P256():
			want = "ES256"
		case elliptic.P384():
			want = "ES384"
		case elliptic.P521():
			want = "ES512"
		}
		if h == 0 || alg != want {
			break
		}
		size := (k.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return errBad
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		if !ecdsa.Verify(k, digest(h.New(), input), r, s) {
			return errBad
		}
		return nil
	case *rsa.PublicKey:
		if h, ok := rsaAlgs[alg]; ok {
			if rsa.VerifyPKCS1v15(k, h, digest(h.New(), input), sig) != nil {
				return errBad
			}
			return nil
		}
		if h, ok := pssAlgs[alg]; ok {
			if rsa.VerifyPSS(k, h, digest(h.New(), input), sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) != nil {
				return errBad
			}
			return nil
		}
	}
	return fmt.Errorf("algorithm %q does not fit the key or is not accepted", alg)
}

var (
	ecAlgs  = map[string]crypto.Hash{"ES256": crypto.SHA256, "ES384": crypto.SHA384, "ES512": crypto.SHA512}
	rsaAlgs = map[string]crypto.Hash{"RS256": crypto.SHA256, "RS384": crypto.SHA384, "RS512": crypto.SHA512}
	pssAlgs = map[string]crypto.Hash{"PS256": crypto.SHA256, "PS384": crypto.SHA384, "PS512": crypto.SHA512}
)

func digest(h hash.Hash, input []byte) []byte {
	h.Write(input)
	return h.Sum(nil)
}

// isJSONObject reports whether b is (after whitespace) a JSON object.
func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}
