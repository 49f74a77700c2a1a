package auth

import (
	"encoding/base64"
	"slices"
	"strings"
)

// maxKIDBytes bounds the kid header; key ids are map keys, never paths or URLs.
const maxKIDBytes = 256

// Claim names Gatehouse reads or writes.
const (
	claimIss   = "iss"
	claimSub   = "sub"
	claimAud   = "aud"
	claimExp   = "exp"
	claimNbf   = "nbf"
	claimIat   = "iat"
	claimJti   = "jti"
	claimAct   = "act"
	claimScope = "scope"
	claimScp   = "scp"
)

// registeredClaims are the claim names RFC 7519 registers, plus "act" (RFC 8693) and
// "scope"/"scp": a case variant of any of them is refused.
var registeredClaims = []string{claimIss, claimSub, claimAud, claimExp, claimNbf, claimIat, claimJti, claimAct, claimScope, claimScp}

// headerNames are the JOSE header parameters whose case variants are refused.
var headerNames = newFoldSet([]string{"alg", "kid", "typ", "cty", "crit", "zip", "jku", "jwk", "x5u", "x5c", "x5t", "x5t#S256", "b64"})

// acceptedTypes are the typ header values accepted (compared case-insensitively, RFC 7515
// §4.1.9); an absent typ is accepted too.
var acceptedTypes = []string{"JWT", "at+jwt", "application/at+jwt", "application/jwt"}

// b64 decodes a JWS segment: unpadded base64url, strictly (no padding, no stray bits).
var b64 = base64.RawURLEncoding.Strict()

// token is a JWS in compact serialization, split and decoded but not yet verified.
type token struct {
	signingInput string // header "." payload, as received: what the signature covers
	signature    []byte
	alg, kid     string
	claims       map[string]any
}

// parseToken splits and decodes raw, and checks the header. It reads the header and the
// claims strictly (no duplicate names, no case variants of guarded claim names, valid
// UTF-8) and never looks at jku, jwk, x5u or x5c: keys come from configuration only.
// Size limits are the caller's to check first.
func parseToken(raw string, guarded foldSet) (*token, Reason) {
	h, rest, ok1 := strings.Cut(raw, ".")
	p, s, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || h == "" || p == "" || s == "" || strings.Contains(s, ".") {
		return nil, ReasonMalformed
	}
	t := &token{signingInput: raw[:len(h)+1+len(p)]}
	header, err := decodeSegment(h)
	if err != nil || caseVariant(header, headerNames) {
		return nil, ReasonMalformed
	}
	if r := t.readHeader(header); r != "" {
		return nil, r
	}
	if t.signature, err = b64.DecodeString(s); err != nil {
		return nil, ReasonMalformed
	}
	payload, err := b64.DecodeString(p)
	if err != nil {
		return nil, ReasonMalformed
	}
	if t.claims, err = decodeObject(payload); err != nil {
		return nil, ReasonInvalidClaims
	}
	if caseVariant(t.claims, guarded) {
		return nil, ReasonInvalidClaims
	}
	return t, ""
}

// readHeader takes alg and kid from a decoded header and refuses headers asking for
// processing Gatehouse does not do (crit, zip) or typed as something other than a JWT.
func (t *token) readHeader(header map[string]any) Reason {
	alg, ok := header["alg"].(string)
	if !ok || alg == "" {
		return ReasonMalformed
	}
	t.alg = alg
	if kid, present := header["kid"]; present {
		s, ok := kid.(string)
		if !ok || len(s) > maxKIDBytes {
			return ReasonMalformed
		}
		t.kid = s
	}
	if _, present := header["crit"]; present {
		return ReasonUnsupportedHeader
	}
	if _, present := header["zip"]; present {
		return ReasonUnsupportedHeader
	}
	if typ, present := header["typ"]; present {
		s, ok := typ.(string)
		if !ok || !slices.ContainsFunc(acceptedTypes, func(a string) bool { return strings.EqualFold(a, s) }) {
			return ReasonUnsupportedHeader
		}
	}
	return ""
}

func decodeSegment(seg string) (map[string]any, error) {
	data, err := b64.DecodeString(seg)
	if err != nil {
		return nil, err
	}
	return decodeObject(data)
}

// looksLikeJWT reports whether a bearer value has the shape of a JWS compact serialization
// (two dots); other bearer values may be API keys.
func looksLikeJWT(s string) bool { return strings.Count(s, ".") == 2 }
