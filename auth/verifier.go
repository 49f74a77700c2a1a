package auth

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Verifier verifies the bearer JWTs of one issuer: size, structure, the signature with the
// issuer's keys (each pinned to its algorithms), then the claims. It is safe for
// concurrent use.
type Verifier struct {
	issuer      string
	audiences   []string
	keys        keySource
	algorithms  []string // every algorithm some key of keys may verify
	required    []string
	leeway      time.Duration
	maxBytes    int
	scopeClaims []string
	tierClaim   string
	guarded     foldSet // claim names whose case variants are refused
	now         func() time.Time
}

// verifierSettings are what a Verifier is built from besides its keys.
type verifierSettings struct {
	cfg        IssuerConfig // with defaults applied
	algorithms []string
	now        func() time.Time
}

func newVerifier(s verifierSettings, keys keySource) *Verifier {
	c := s.cfg
	guarded := slices.Concat(registeredClaims, c.ScopeClaims, c.RequiredClaims)
	if c.TierClaim != "" {
		guarded = append(guarded, c.TierClaim)
	}
	return &Verifier{
		issuer: c.Issuer, audiences: c.Audiences, keys: keys, algorithms: s.algorithms,
		required: c.RequiredClaims, leeway: c.Leeway, maxBytes: c.MaxTokenBytes,
		scopeClaims: c.ScopeClaims, tierClaim: c.TierClaim, guarded: newFoldSet(guarded), now: s.now,
	}
}

// Issuer returns the iss value this verifier accepts.
func (v *Verifier) Issuer() string { return v.issuer }

// Verify verifies raw, a compact JWS without any "Bearer " prefix, and returns the
// principal it authenticates. On failure the error is an AUTHENTICATION_FAILED *gateway.Error
// whose data carries a Reason; neither its text nor its data contains any part of raw.
func (v *Verifier) Verify(ctx context.Context, raw string) (gateway.Principal, error) {
	if len(raw) > v.maxBytes {
		return gateway.Principal{}, refuse(ReasonTooLarge)
	}
	t, r := parseToken(raw, v.guarded)
	if r != "" {
		return gateway.Principal{}, refuse(r)
	}
	if iss, _ := t.claims[claimIss].(string); iss != v.issuer {
		return gateway.Principal{}, refuse(ReasonUnknownIssuer)
	}
	return v.verify(ctx, t)
}

// verify checks the signature and then the claims of a parsed token of this issuer.
func (v *Verifier) verify(ctx context.Context, t *token) (gateway.Principal, error) {
	if r := v.checkSignature(ctx, t); r != "" {
		return gateway.Principal{}, refuse(r)
	}
	p, r := v.principal(t.claims)
	if r != "" {
		return gateway.Principal{}, refuse(r)
	}
	return p, nil
}

// checkSignature finds the keys the token's kid names and verifies the signature with
// those allowed to verify its alg. The alg is compared exactly: "none", "None" and any
// algorithm of another key family are never allowed.
func (v *Verifier) checkSignature(ctx context.Context, t *token) Reason {
	if !slices.Contains(v.algorithms, t.alg) {
		return ReasonAlgorithm
	}
	keys, err := v.keys.lookup(ctx, t.kid)
	if err != nil {
		return ReasonUnknownKey
	}
	method := jwt.GetSigningMethod(t.alg)
	tried := false
	for _, k := range keys {
		if !slices.Contains(k.algorithms, t.alg) {
			continue
		}
		tried = true
		if method.Verify(t.signingInput, t.signature, k.key) == nil {
			return ""
		}
	}
	if !tried {
		return ReasonAlgorithm
	}
	return ReasonBadSignature
}

// principal checks the claims of a token whose signature verified and builds its principal.
func (v *Verifier) principal(claims map[string]any) (gateway.Principal, Reason) {
	if r := v.checkTimes(claims); r != "" {
		return gateway.Principal{}, r
	}
	if r := v.checkAudience(claims[claimAud]); r != "" {
		return gateway.Principal{}, r
	}
	for _, name := range v.required {
		if claims[name] == nil {
			return gateway.Principal{}, ReasonMissingClaim
		}
	}
	sub, r := stringClaim(claims, claimSub)
	if r != "" || sub == "" {
		return gateway.Principal{}, firstReason(r, ReasonMissingClaim)
	}
	if _, r := stringClaim(claims, claimJti); r != "" {
		return gateway.Principal{}, r
	}
	exp, _ := timeClaim(claims, claimExp) // checkTimes read it
	p := gateway.Principal{Subject: sub, Tier: DefaultTier, Claims: claims, Expires: exp.Add(v.leeway)}
	if v.tierClaim != "" {
		tier, r := stringClaim(claims, v.tierClaim)
		if r != "" {
			return gateway.Principal{}, r
		}
		if tier != "" {
			p.Tier = tier
		}
	}
	for _, name := range v.scopeClaims {
		var ok bool
		if p.Scopes, ok = appendScopes(p.Scopes, claims[name]); !ok {
			return gateway.Principal{}, ReasonInvalidClaims
		}
	}
	return p, ""
}

// checkTimes checks exp (required), nbf and iat against now, with the leeway.
func (v *Verifier) checkTimes(claims map[string]any) Reason {
	now := v.now()
	exp, r := timeClaim(claims, claimExp)
	switch {
	case r != "":
		return r
	case exp.IsZero():
		return ReasonMissingClaim
	case !now.Before(exp.Add(v.leeway)):
		return ReasonExpired
	}
	nbf, r := timeClaim(claims, claimNbf)
	switch {
	case r != "":
		return r
	case !nbf.IsZero() && now.Add(v.leeway).Before(nbf):
		return ReasonNotYetValid
	}
	iat, r := timeClaim(claims, claimIat)
	switch {
	case r != "":
		return r
	case !iat.IsZero() && now.Add(v.leeway).Before(iat):
		return ReasonIssuedInFuture
	}
	return ""
}

// checkAudience requires aud (a string or an array of strings) to name one of the
// verifier's audiences; a verifier without audiences only checks its type.
func (v *Verifier) checkAudience(aud any) Reason {
	var names []string
	switch a := aud.(type) {
	case nil:
		if len(v.audiences) == 0 {
			return ""
		}
		return ReasonMissingClaim
	case string:
		names = []string{a}
	case []any:
		for _, e := range a {
			s, ok := e.(string)
			if !ok {
				return ReasonInvalidClaims
			}
			names = append(names, s)
		}
	default:
		return ReasonInvalidClaims
	}
	if len(v.audiences) == 0 {
		return ""
	}
	for _, n := range names {
		if slices.Contains(v.audiences, n) {
			return ""
		}
	}
	return ReasonWrongAudience
}

// latestNumericDate is the largest NumericDate accepted (9999-12-31T23:59:59Z): beyond it,
// converting seconds to a time would not be exact on every platform.
const latestNumericDate = 253402300799

// timeClaim reads a NumericDate claim; the zero time means absent.
func timeClaim(claims map[string]any, name string) (time.Time, Reason) {
	v, present := claims[name]
	if !present {
		return time.Time{}, ""
	}
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, ReasonInvalidClaims
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > latestNumericDate {
		return time.Time{}, ReasonInvalidClaims
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), ""
}

// stringClaim reads an optional string claim.
func stringClaim(claims map[string]any, name string) (string, Reason) {
	v, present := claims[name]
	if !present {
		return "", ""
	}
	s, ok := v.(string)
	if !ok {
		return "", ReasonInvalidClaims
	}
	return s, ""
}

// appendScopes adds the scopes of one claim value (space-separated string, or array of
// strings) to scopes, skipping duplicates; ok is false for a value of another type.
func appendScopes(scopes []string, v any) ([]string, bool) {
	add := func(s string) {
		if s != "" && !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	switch x := v.(type) {
	case nil:
	case string:
		for s := range strings.FieldsSeq(x) {
			add(s)
		}
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok || strings.ContainsAny(s, " \t\n") {
				return nil, false
			}
			add(s)
		}
	default:
		return nil, false
	}
	return scopes, true
}

func firstReason(rs ...Reason) Reason {
	for _, r := range rs {
		if r != "" {
			return r
		}
	}
	return ""
}

// errUnknownKey is what a keySource returns when no key has the kid.
var errUnknownKey = errors.New("no key with this key id")
