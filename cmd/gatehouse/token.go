package main

import (
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
)

// Defaults of `gatehouse token`, matching the development issuer of configs/examples.
const (
	devIssuer   = "gatehouse-dev"
	devAudience = "gatehouse"
)

// token mints a development token signed with a private key file and prints it.
func token(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyFile := fs.String("key", "", "PEM private key to sign with: RSA (RS256), EC (ES256/384/512) or Ed25519 (EdDSA)")
	sub := fs.String("sub", "", "subject (sub claim)")
	scope := fs.String("scope", "", `space-separated scopes (scope claim), e.g. "read write"`)
	iss := fs.String("iss", devIssuer, "issuer (iss claim)")
	ttl := fs.Duration("ttl", time.Hour, "lifetime: exp = now + ttl")
	kid := fs.String("kid", "", "key id (kid header); default: the key's RFC 7638 thumbprint")
	var aud, extra []string
	fs.Func("aud", "audience (aud claim); repeat for several (default "+devAudience+")", func(v string) error {
		aud = append(aud, v)
		return nil
	})
	fs.Func("claim", "a further string claim NAME=VALUE; repeat for several", func(v string) error {
		extra = append(extra, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *keyFile == "" || *sub == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "gatehouse token: --key and --sub are required, and nothing else may follow the flags")
		return 2
	}
	if *ttl <= 0 {
		fmt.Fprintln(stderr, "gatehouse token: --ttl must be positive")
		return 2
	}
	if len(aud) == 0 {
		aud = []string{devAudience}
	}
	claims, err := tokenClaims(*iss, *sub, *scope, aud, extra, *ttl)
	if err != nil {
		fmt.Fprintln(stderr, "gatehouse token:", err)
		return 2
	}
	tok, err := signWithFile(*keyFile, *kid, claims)
	if err != nil {
		fmt.Fprintln(stderr, "gatehouse token:", err)
		return 1
	}
	fmt.Fprintln(stdout, tok)
	return 0
}

// tokenClaims builds the claims of a development token.
func tokenClaims(iss, sub, scope string, aud, extra []string, ttl time.Duration) (map[string]any, error) {
	var jti [16]byte
	_, _ = rand.Read(jti[:]) // crypto/rand.Read never fails
	now := time.Now()
	claims := map[string]any{
		"iss": iss, "sub": sub, "iat": now.Unix(), "exp": now.Add(ttl).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti[:]),
	}
	if len(aud) == 1 {
		claims["aud"] = aud[0]
	} else {
		claims["aud"] = aud
	}
	if s := strings.Join(strings.Fields(scope), " "); s != "" {
		claims["scope"] = s
	}
	for _, kv := range extra {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--claim %q is not NAME=VALUE", kv)
		}
		if _, set := claims[name]; set || name == "aud" || name == "scope" {
			return nil, fmt.Errorf("--claim %s: set it with its own flag", name)
		}
		claims[name] = value
	}
	return claims, nil
}

// signWithFile signs claims with the private key in file.
func signWithFile(file, kid string, claims map[string]any) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	key, err := auth.ParsePrivateKeyPEM(data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	signer, err := auth.NewSigner(key, kid)
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	tok, err := signer.Sign(claims)
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	return tok, nil
}
