package nekte

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse-dev/gatehouse/codecs/canonical"
)

// receiptClaims are the claims of a task receipt. Timestamps of the task are epoch
// milliseconds; iat is the JWT's own (seconds).
type receiptClaims struct {
	jwt.RegisteredClaims

	TaskID       string `json:"task_id"`
	Cap          string `json:"cap"`
	H            string `json:"h"`
	InputSHA256  string `json:"input_sha256"`
	OutputSHA256 string `json:"output_sha256"`
	CreatedAt    int64  `json:"created_at"`
	CompletedAt  int64  `json:"completed_at"`
}

// signer signs and checks receipts with the gateway's receipt key.
type signer struct {
	method    jwt.SigningMethod
	key       crypto.Signer
	kid       string
	issuer    string
	generated bool
}

// newSigner loads the key of cfg.KeyFile, or generates an Ed25519 key when none is
// configured.
func newSigner(cfg ReceiptsConfig) (*signer, error) {
	s := &signer{issuer: cfg.Issuer}
	if cfg.KeyFile == "" {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("nekte: generating the receipt key: %w", err)
		}
		s.key, s.generated = priv, true
	} else {
		key, err := loadKey(cfg.KeyFile)
		if err != nil {
			return nil, err
		}
		s.key = key
	}
	switch s.key.(type) {
	case ed25519.PrivateKey:
		s.method = jwt.SigningMethodEdDSA
	default:
		s.method = jwt.SigningMethodES256
	}
	s.kid = thumbprint(s.jwk())
	return s, nil
}

// loadKey reads a PEM private key usable for receipts: Ed25519, or ECDSA on P-256.
func loadKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("nekte: receipts.key_file: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("nekte: receipts.key_file %s holds no PEM block", path)
	}
	var key any
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("nekte: receipts.key_file %s: PEM block %q is not a private key (want PRIVATE KEY or EC PRIVATE KEY)", path, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("nekte: receipts.key_file %s: %w", path, err)
	}
	switch k := key.(type) {
	case ed25519.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("nekte: receipts.key_file %s: an ECDSA key must be on P-256 (ES256)", path)
		}
		return k, nil
	default:
		return nil, fmt.Errorf("nekte: receipts.key_file %s: a %T cannot sign receipts (use Ed25519 or ECDSA P-256)", path, key)
	}
}

// sign returns the compact JWS of c, with the issuer and issue time set.
func (s *signer) sign(c receiptClaims, issuedAtMs int64) (string, error) {
	c.Issuer = s.issuer
	c.IssuedAt = jwt.NewNumericDate(time.UnixMilli(issuedAtMs))
	c.ID = c.TaskID
	t := jwt.NewWithClaims(s.method, c)
	t.Header["kid"] = s.kid
	t.Header["typ"] = "nekte-receipt+jwt"
	return t.SignedString(s.key)
}

// errForeignKey reports a receipt whose kid is not this gateway's key.
var errForeignKey = errors.New("receipt signed by another key")

// parse checks a receipt's signature with the gateway's key and returns its claims.
func (s *signer) parse(token string) (*receiptClaims, error) {
	var c receiptClaims
	_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		if kid, _ := t.Header["kid"].(string); kid != s.kid {
			return nil, errForeignKey
		}
		return s.key.Public(), nil
	}, jwt.WithValidMethods([]string{s.method.Alg()}), jwt.WithIssuer(s.issuer))
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// jwk returns the public key as a JSON Web Key (RFC 7517), without kid.
func (s *signer) jwk() map[string]string {
	switch pub := s.key.Public().(type) {
	case ed25519.PublicKey:
		return map[string]string{"kty": "OKP", "crv": "Ed25519", "x": b64(pub)}
	case *ecdsa.PublicKey:
		raw, err := pub.Bytes() // 0x04 || X || Y
		if err != nil || len(raw) != 65 {
			return map[string]string{}
		}
		return map[string]string{"kty": "EC", "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:])}
	default:
		return map[string]string{}
	}
}

// thumbprint returns the RFC 7638 thumbprint of a JWK: the SHA-256 of its required
// members in lexicographic order, base64url.
func thumbprint(jwk map[string]string) string {
	b, _ := json.Marshal(jwk) // encoding/json sorts map keys; the values are base64url or names
	sum := sha256.Sum256(b)
	return b64(sum[:])
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// digest returns the hex SHA-256 of the canonical form of the JSON text v.
func digest(v []byte) (string, error) {
	c, err := canonical.CanonicalJSON(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}
