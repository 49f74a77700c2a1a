package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
)

// MinRSABits is the smallest RSA modulus accepted for verifying or signing.
const MinRSABits = 2048

// Algorithm names used on their own.
const (
	algRS256 = "RS256"
	algES256 = "ES256"
	algEdDSA = "EdDSA"
)

// Algorithm families: every JWS algorithm Gatehouse accepts belongs to exactly one, and a
// key only ever verifies algorithms of its own family.
var (
	rsaAlgorithms  = []string{algRS256, "RS384", "RS512", "PS256", "PS384", "PS512"}
	hmacAlgorithms = []string{"HS256", "HS384", "HS512"}
	// curveAlgorithm pins each curve to the one ECDSA algorithm defined for it.
	curveAlgorithm = map[string]string{"P-256": algES256, "P-384": "ES384", "P-521": "ES512"}
)

// supportedAlgorithms are the algorithms a configuration may name.
var supportedAlgorithms = slices.Concat(rsaAlgorithms, hmacAlgorithms, []string{algES256, "ES384", "ES512", algEdDSA})

// defaultRSAAlgorithms are the algorithms an RSA key verifies when the issuer names none.
var defaultRSAAlgorithms = []string{algRS256, "PS256"}

// hmacKeyBytes is the smallest secret each HMAC algorithm accepts (RFC 7518 §3.2: a key at
// least as long as the hash output).
var hmacKeyBytes = map[string]int{"HS256": 32, "HS384": 48, "HS512": 64}

// keyAlgorithms returns the algorithms key may verify (or sign with): those of its family
// that configured allows, or the family's defaults when configured is empty. A JWK's own
// "alg", when set, narrows the result to that one algorithm.
func keyAlgorithms(key any, configured []string, jwkAlg string) []string {
	var family, defaults []string
	switch k := key.(type) {
	case *rsa.PublicKey:
		family, defaults = rsaAlgorithms, defaultRSAAlgorithms
	case *ecdsa.PublicKey:
		alg := curveAlgorithm[k.Curve.Params().Name]
		family, defaults = []string{alg}, []string{alg}
	case ed25519.PublicKey:
		family, defaults = []string{algEdDSA}, []string{algEdDSA}
	case []byte:
		for _, alg := range hmacAlgorithms {
			if len(k) >= hmacKeyBytes[alg] {
				family = append(family, alg)
			}
		}
		defaults = family
	}
	out := defaults
	if len(configured) > 0 {
		out = nil
		for _, alg := range configured {
			if slices.Contains(family, alg) {
				out = append(out, alg)
			}
		}
	}
	if jwkAlg != "" {
		if !slices.Contains(out, jwkAlg) {
			return nil
		}
		return []string{jwkAlg}
	}
	return out
}

// publicKeyOf returns the public half of a key as the verifier wants it, and refuses keys
// Gatehouse does not use (RSA below MinRSABits, curves other than P-256/384/521).
func publicKeyOf(key any) (any, error) {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return publicKeyOf(&k.PublicKey)
	case *ecdsa.PrivateKey:
		return publicKeyOf(&k.PublicKey)
	case ed25519.PrivateKey:
		return publicKeyOf(k.Public())
	case *rsa.PublicKey:
		if k.N.BitLen() < MinRSABits {
			return nil, fmt.Errorf("RSA key of %d bits: at least %d are required", k.N.BitLen(), MinRSABits)
		}
		return k, nil
	case *ecdsa.PublicKey:
		if _, ok := curveAlgorithm[k.Curve.Params().Name]; !ok {
			return nil, fmt.Errorf("EC key on curve %s: only P-256, P-384 and P-521 are supported", k.Curve.Params().Name)
		}
		return k, nil
	case ed25519.PublicKey:
		return k, nil
	default:
		return nil, fmt.Errorf("unsupported key type %T", key)
	}
}

// AlgorithmFor returns the JWS algorithm Gatehouse signs with for a key: RS256 for RSA,
// ES256/ES384/ES512 by curve for ECDSA, EdDSA for Ed25519.
func AlgorithmFor(key crypto.PublicKey) (string, error) {
	pub, err := publicKeyOf(key)
	if err != nil {
		return "", err
	}
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return algRS256, nil
	case *ecdsa.PublicKey:
		return curveAlgorithm[k.Curve.Params().Name], nil
	default:
		return algEdDSA, nil
	}
}

// Thumbprint returns the RFC 7638 JWK thumbprint of a public key (SHA-256, base64url): the
// key id Gatehouse gives keys that come without one.
func Thumbprint(key crypto.PublicKey) (string, error) {
	pub, err := publicKeyOf(key)
	if err != nil {
		return "", err
	}
	b64 := base64.RawURLEncoding.EncodeToString
	var canonical string
	switch k := pub.(type) {
	case *rsa.PublicKey:
		e := big.NewInt(int64(k.E)).Bytes()
		canonical = fmt.Sprintf(`{"e":%q,"kty":"RSA","n":%q}`, b64(e), b64(k.N.Bytes()))
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		x, y, err := ecPoint(k, size)
		if err != nil {
			return "", err
		}
		canonical = fmt.Sprintf(`{"crv":%q,"kty":"EC","x":%q,"y":%q}`, k.Curve.Params().Name, b64(x), b64(y))
	case ed25519.PublicKey:
		canonical = fmt.Sprintf(`{"crv":"Ed25519","kty":"OKP","x":%q}`, b64(k))
	}
	sum := sha256.Sum256([]byte(canonical))
	return b64(sum[:]), nil
}

// ecPoint returns the fixed-size big-endian coordinates of an EC public key.
func ecPoint(k *ecdsa.PublicKey, size int) (x, y []byte, err error) {
	raw, err := k.Bytes() // uncompressed: 0x04 || X || Y
	if err != nil {
		return nil, nil, fmt.Errorf("encoding EC key: %w", err)
	}
	return raw[1 : 1+size], raw[1+size:], nil
}

// ParsePrivateKeyPEM parses the first private key in PEM data: PKCS #8 ("PRIVATE KEY"),
// PKCS #1 ("RSA PRIVATE KEY") or SEC 1 ("EC PRIVATE KEY"). Text around the PEM block,
// such as a comment line above it, is ignored. The key must be RSA (≥ MinRSABits), ECDSA on
// P-256/384/521, or Ed25519.
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no private key PEM block found")
		}
		var key any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", block.Type, err)
		}
		if _, err := publicKeyOf(key); err != nil {
			return nil, err
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("unsupported key type %T", key)
		}
		return signer, nil
	}
}

// parsePublicKeysPEM parses every public key in PEM data: "PUBLIC KEY" (PKIX), "RSA PUBLIC
// KEY" (PKCS #1) and "CERTIFICATE" blocks (the certificate's key; the certificate itself is
// not checked). A private key is refused: the gateway verifies with public keys only.
func parsePublicKeysPEM(data []byte) ([]any, error) {
	var keys []any
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		var key any
		var err error
		switch block.Type {
		case "PUBLIC KEY":
			key, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			key, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "CERTIFICATE":
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
				key = cert.PublicKey
			}
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			return nil, errors.New("holds a private key: give its public key (openssl pkey -in key.pem -pubout)")
		default:
			return nil, fmt.Errorf("unexpected PEM block %q", block.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", block.Type, err)
		}
		if key, err = publicKeyOf(key); err != nil {
			return nil, err
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, errors.New("no PEM block found")
	}
	return keys, nil
}
