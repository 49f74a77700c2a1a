package auth_test

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

const issRSAPEM = "https://rsa-pem.test"

type attack struct {
	name   string
	tok    string
	reason auth.Reason
}

// TestAttackCorpus: every known way to forge, replay or smuggle a JWT is refused with
// AUTHENTICATION_FAILED and the expected reason, and nothing the caller can read or the
// gateway logs contains the token or any of its segments. Tokens naming attacker key
// servers never make the gateway fetch them, and unknown key ids cause at most one
// (rate-limited) fetch of the issuer's JWKS.
func TestAttackCorpus(t *testing.T) {
	f := newFixture(t)
	logs := f.logs
	rsaPEMFile := writeFile(t, "rsa.pem", publicPEM(t, &rsaKey().PublicKey))
	rsaPEMKID := must(auth.Thumbprint(&rsaKey().PublicKey))
	pemAuth := open(t, auth.Config{JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{
		{Issuer: issRSAPEM, Audiences: []string{"gatehouse"}, PEMFiles: []string{rsaPEMFile}},
	}}}, logs)
	attacker := newJWKSServer(t, jwk(t, &attackerRSA().PublicKey, "attacker-1", "RS256"), jwk(t, &attackerRSA().PublicKey, "rsa-1", "RS256"))

	corpus := slicesConcat(
		noneAttacks(t),
		confusionAttacks(t, rsaPEMKID),
		timeAttacks(t),
		issuerAttacks(t),
		keyAttacks(t, attacker.URL, rsaPEMKID),
		sizeAndShapeAttacks(t),
		strictJSONAttacks(t, f.edKID),
		headerAttacks(t),
	)
	for _, tt := range corpus {
		t.Run(tt.name, func(t *testing.T) {
			a := f.auth
			if strings.Contains(tt.name, "(PEM issuer)") {
				a = pemAuth
			}
			p, err := bearer(a, tt.tok)
			ge := gateway.AsError(err)
			if err == nil || ge.Code() != schemas.CodeAuthentication {
				t.Fatalf("got %+v, %v; want AUTHENTICATION_FAILED", p, err)
			}
			if got := auth.ReasonOf(err); got != tt.reason {
				t.Fatalf("reason %q, want %q", got, tt.reason)
			}
			if l := leaks(tt.tok, err.Error(), fmt.Sprintf("%+v", ge.Data()), ge.Message(), logs.String()); len(l) > 0 {
				t.Fatalf("token text %q found in the error or the logs", l)
			}
		})
	}
	if n := attacker.hits.Load(); n != 0 {
		t.Fatalf("the attacker's key server was fetched %d times", n)
	}
	if n := f.jwks.hits.Load(); n > 2 {
		t.Fatalf("the issuer's JWKS was fetched %d times, want at most 2 (start + one unknown-kid refresh)", n)
	}
}

func slicesConcat(groups ...[]attack) []attack {
	var out []attack
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// header returns a JSON header with alg and kid.
func header(alg, kid string) string {
	return string(must(json.Marshal(map[string]any{"alg": alg, "kid": kid, "typ": "JWT"})))
}

func payload(c map[string]any) string { return string(must(json.Marshal(c))) }

func noneAttacks(t *testing.T) []attack {
	var out []attack
	p := payload(claims(issJWKS))
	for _, alg := range []string{"none", "None", "NONE", "nOnE"} {
		in := seg([]byte(header(alg, "rsa-1"))) + "." + seg([]byte(p))
		out = append(out,
			attack{"alg " + alg + " without signature", in + ".", auth.ReasonMalformed},
			attack{"alg " + alg + " with a signature", in + "." + seg([]byte("signature")), auth.ReasonAlgorithm},
		)
	}
	return out
}

func confusionAttacks(t *testing.T, rsaPEMKID string) []attack {
	pemKey := publicPEM(t, &rsaKey().PublicKey)
	derKey := must(x509.MarshalPKIXPublicKey(&rsaKey().PublicKey))
	return []attack{
		{"HS256 keyed with the RSA public key's PEM (JWKS issuer)", sign(t, "HS256", "rsa-1", pemKey, claims(issJWKS)), auth.ReasonAlgorithm},
		{"HS256 keyed with the RSA public key's PEM (PEM issuer)", sign(t, "HS256", rsaPEMKID, pemKey, claims(issRSAPEM)), auth.ReasonAlgorithm},
		{"HS256 keyed with the RSA public key's PEM, no kid (PEM issuer)", sign(t, "HS256", "", pemKey, claims(issRSAPEM)), auth.ReasonAlgorithm},
		{"HS256 keyed with the RSA public key's DER", sign(t, "HS256", "rsa-1", derKey, claims(issJWKS)), auth.ReasonAlgorithm},
		{"ES256 claimed for an RSA key", sign(t, "ES256", "rsa-1", ecKey(), claims(issJWKS)), auth.ReasonAlgorithm},
		{"RS256 claimed for an EC key", sign(t, "RS256", "ec-1", rsaKey(), claims(issJWKS)), auth.ReasonAlgorithm},
		{"RS512, not pinned", sign(t, "RS512", "rsa-1", rsaKey(), claims(issJWKS)), auth.ReasonAlgorithm},
		{"PS256 for a JWK pinned to ES256", sign(t, "PS256", "ec-1", rsaKey(), claims(issJWKS)), auth.ReasonAlgorithm},
		{"RS256 at the secret's issuer", sign(t, "RS256", "", rsaKey(), claims(issSecret)), auth.ReasonAlgorithm},
		{"HS512 with a secret too short for it", sign(t, "HS512", "", []byte(secret), claims(issSecret)), auth.ReasonAlgorithm},
		{"HS256 with a wrong secret", sign(t, "HS256", "", []byte(strings.Repeat("x", 48)), claims(issSecret)), auth.ReasonBadSignature},
		{"alg in lower case", sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS), "alg", "rs256"), auth.ReasonAlgorithm},
	}
}

func timeAttacks(t *testing.T) []attack {
	rs := func(c map[string]any) string { return sign(t, "RS256", "rsa-1", rsaKey(), c) }
	return []attack{
		{"expired an hour ago", rs(claims(issJWKS, "exp", now.Add(-time.Hour).Unix())), auth.ReasonExpired},
		{"expired just past the leeway", rs(claims(issJWKS, "exp", now.Add(-31*time.Second).Unix())), auth.ReasonExpired},
		{"not yet valid", rs(claims(issJWKS, "nbf", now.Add(time.Hour).Unix())), auth.ReasonNotYetValid},
		{"issued in the future beyond the leeway", rs(claims(issJWKS, "iat", now.Add(time.Hour).Unix())), auth.ReasonIssuedInFuture},
		{"no exp", rs(claims(issJWKS, "exp", nil)), auth.ReasonMissingClaim},
		{"exp as a string", rs(claims(issJWKS, "exp", "9999999999")), auth.ReasonInvalidClaims},
		{"exp overflowing", rs(claims(issJWKS, "exp", 1e300)), auth.ReasonInvalidClaims},
		{"exp negative", rs(claims(issJWKS, "exp", -1)), auth.ReasonInvalidClaims},
		{"nbf as a bool", rs(claims(issJWKS, "nbf", true)), auth.ReasonInvalidClaims},
	}
}

func issuerAttacks(t *testing.T) []attack {
	rs := func(c map[string]any) string { return sign(t, "RS256", "rsa-1", rsaKey(), c) }
	return []attack{
		{"wrong issuer", rs(claims("https://evil.test")), auth.ReasonUnknownIssuer},
		{"no issuer", rs(claims(issJWKS, "iss", nil)), auth.ReasonUnknownIssuer},
		{"issuer as an array", rs(claims(issJWKS, "iss", []string{issJWKS})), auth.ReasonUnknownIssuer},
		{"issuer differing in case", rs(claims(strings.ToUpper(issJWKS))), auth.ReasonUnknownIssuer},
		{"wrong audience", rs(claims(issJWKS, "aud", "other")), auth.ReasonWrongAudience},
		{"wrong audiences", rs(claims(issJWKS, "aud", []string{"a", "b"})), auth.ReasonWrongAudience},
		{"no audience", rs(claims(issJWKS, "aud", nil)), auth.ReasonMissingClaim},
		{"audience as a number", rs(claims(issJWKS, "aud", 42)), auth.ReasonInvalidClaims},
		{"audience array of numbers", rs(claims(issJWKS, "aud", []int{1})), auth.ReasonInvalidClaims},
		{"no subject", rs(claims(issJWKS, "sub", nil)), auth.ReasonMissingClaim},
		{"empty subject", rs(claims(issJWKS, "sub", "")), auth.ReasonMissingClaim},
		{"subject as a number", rs(claims(issJWKS, "sub", 7)), auth.ReasonInvalidClaims},
		{"scope as a number", rs(claims(issJWKS, "scope", 7)), auth.ReasonInvalidClaims},
		{"scp with a number", rs(claims(issJWKS, "scp", []any{"a", 1})), auth.ReasonInvalidClaims},
		{"jti as a number", rs(claims(issJWKS, "jti", 7)), auth.ReasonInvalidClaims},
	}
}

func keyAttacks(t *testing.T, attackerURL, rsaPEMKID string) []attack {
	atk := attackerRSA()
	cert := selfSigned(t)
	tok := sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS))
	other := sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS, "sub", "admin"))
	cut := strings.LastIndex(tok, ".")
	sig := must(base64.RawURLEncoding.DecodeString(tok[cut+1:]))
	sig[10] ^= 0x01
	flipped := tok[:cut+1] + seg(sig)
	return []attack{
		{"unknown kid", sign(t, "RS256", "rsa-9", rsaKey(), claims(issJWKS)), auth.ReasonUnknownKey},
		{"kid with path traversal", sign(t, "RS256", "../../etc/passwd", rsaKey(), claims(issJWKS)), auth.ReasonUnknownKey},
		{"kid with path traversal (PEM issuer)", sign(t, "RS256", "../../../../etc/passwd", rsaKey(), claims(issRSAPEM)), auth.ReasonUnknownKey},
		{"kid naming a device (PEM issuer)", sign(t, "RS256", "/dev/zero", rsaKey(), claims(issRSAPEM)), auth.ReasonUnknownKey},
		{"kid with a NUL", sign(t, "RS256", "rsa-1\x00", rsaKey(), claims(issJWKS)), auth.ReasonUnknownKey},
		{"kid of 300 bytes", sign(t, "RS256", strings.Repeat("k", 300), rsaKey(), claims(issJWKS)), auth.ReasonMalformed},
		{"kid as a number", sign(t, "RS256", "", rsaKey(), claims(issJWKS), "kid", 1), auth.ReasonMalformed},
		{"jku to the attacker's JWKS, attacker's kid", sign(t, "RS256", "attacker-1", atk, claims(issJWKS), "jku", attackerURL), auth.ReasonUnknownKey},
		{"jku to the attacker's JWKS, our kid", sign(t, "RS256", "rsa-1", atk, claims(issJWKS), "jku", attackerURL), auth.ReasonBadSignature},
		{"x5u to the attacker's certificate", sign(t, "RS256", "rsa-1", atk, claims(issJWKS), "x5u", attackerURL), auth.ReasonBadSignature},
		{"embedded jwk of the attacker", sign(t, "RS256", "rsa-1", atk, claims(issJWKS), "jwk", jwk(t, &atk.PublicKey, "rsa-1", "RS256")), auth.ReasonBadSignature},
		{"embedded jwk of the attacker, no kid", sign(t, "RS256", "", atk, claims(issJWKS), "jwk", jwk(t, &atk.PublicKey, "", "RS256")), auth.ReasonBadSignature},
		{"embedded jwk of the attacker (PEM issuer)", sign(t, "RS256", rsaPEMKID, atk, claims(issRSAPEM), "jwk", jwk(t, &atk.PublicKey, rsaPEMKID, "RS256")), auth.ReasonBadSignature},
		{"x5c of the attacker's certificate", sign(t, "RS256", "rsa-1", atk, claims(issJWKS), "x5c", []string{cert}), auth.ReasonBadSignature},
		{"signed by the attacker, no kid", sign(t, "RS256", "", atk, claims(issJWKS)), auth.ReasonBadSignature},
		{"a flipped signature bit", flipped, auth.ReasonBadSignature},
		{"another token's signature", tok[:strings.LastIndex(tok, ".")] + other[strings.LastIndex(other, "."):], auth.ReasonBadSignature},
		{"signature with extra bytes", tok + "AAAA", auth.ReasonBadSignature},
	}
}

// selfSigned returns the attacker's self-signed certificate, base64 DER as in x5c.
func selfSigned(t *testing.T) string {
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jwks.test"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &attackerRSA().PublicKey, attackerRSA())
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}

func sizeAndShapeAttacks(t *testing.T) []attack {
	tok := sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS))
	parts := strings.Split(tok, ".")
	h, p, s := parts[0], parts[1], parts[2]
	// The signature of 256 bytes ends in a character carrying 2 bits; setting its 4 unused
	// bits gives another encoding of the same bytes, which strict decoding refuses.
	strayBits := s[:len(s)-1] + string(rune(s[len(s)-1]+1))
	hdr := func(json string) string { return seg([]byte(json)) + "." + p + "." + s }
	pl := func(json string) string {
		return signRaw(t, "RS256", rsaKey(), header("RS256", "rsa-1"), json)
	}
	return []attack{
		{"oversized token, refused before parsing", strings.Repeat("A", 5000) + "." + strings.Repeat("A", 5000) + ".AAAA", auth.ReasonTooLarge},
		{"oversized signed token", sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS, "pad", strings.Repeat("x", 9000))), auth.ReasonTooLarge},
		{"two segments", h + "." + p, auth.ReasonMalformed},
		{"four segments", tok + ".AAAA", auth.ReasonMalformed},
		{"empty segments", "..", auth.ReasonMalformed},
		{"empty signature", h + "." + p + ".", auth.ReasonMalformed},
		{"empty header", "." + p + "." + s, auth.ReasonMalformed},
		{"padding", h + "." + p + "." + s + "==", auth.ReasonMalformed},
		{"padded header", seg([]byte(header("RS256", "rsa-1")+" ")) + "=." + p + "." + s, auth.ReasonMalformed},
		{"standard base64 alphabet", strings.NewReplacer("-", "+", "_", "/").Replace(h) + "+." + p + "." + s, auth.ReasonMalformed},
		{"non-base64 character", h + "." + p + "!." + s, auth.ReasonMalformed},
		{"stray bits in the last character", h + "." + p + "." + strayBits, auth.ReasonMalformed},
		{"trailing garbage after a space", tok + " garbage", auth.ReasonUnsupportedScheme},
		{"header not JSON", hdr("alg=RS256"), auth.ReasonMalformed},
		{"header a JSON array", hdr(`["RS256"]`), auth.ReasonMalformed},
		{"header with trailing data", hdr(header("RS256", "rsa-1") + `{}`), auth.ReasonMalformed},
		{"header without alg", hdr(`{"kid":"rsa-1"}`), auth.ReasonMalformed},
		{"header with alg null", hdr(`{"alg":null}`), auth.ReasonMalformed},
		{"claims a JSON array", pl(`["alice"]`), auth.ReasonInvalidClaims},
		{"claims with trailing data", pl(payload(claims(issJWKS)) + ` {"sub":"admin"}`), auth.ReasonInvalidClaims},
		{"claims not valid UTF-8", pl(`{"iss":"` + issJWKS + `","sub":"al` + "\xff" + `ice"}`), auth.ReasonInvalidClaims},
		{"claims nested 100 deep", pl(`{"iss":"` + issJWKS + `","x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`), auth.ReasonInvalidClaims},
	}
}

func strictJSONAttacks(t *testing.T, edKID string) []attack {
	good := payload(claims(issJWKS))
	body := good[1 : len(good)-1] // the members, without braces
	pl := func(json string) string {
		return signRaw(t, "RS256", rsaKey(), header("RS256", "rsa-1"), json)
	}
	ed := func(c map[string]any) string { return sign(t, "EdDSA", edKID, edKey(), c) }
	return []attack{
		{"duplicate sub", pl(`{` + body + `,"sub":"admin"}`), auth.ReasonInvalidClaims},
		{"duplicate exp", pl(`{` + body + fmt.Sprintf(`,"exp":%d}`, now.Add(time.Hour).Unix())), auth.ReasonInvalidClaims},
		{"duplicate by escape", pl(`{` + body + `,"\u0073ub":"admin"}`), auth.ReasonInvalidClaims},
		{"duplicate in a nested object", pl(`{` + body + `,"ctx":{"a":1,"a":2}}`), auth.ReasonInvalidClaims},
		{"duplicate header member", signRaw(t, "RS256", rsaKey(), `{"alg":"RS256","kid":"rsa-1","alg":"none"}`, good), auth.ReasonMalformed},
		{"case variant Exp instead of exp", pl(`{"iss":"` + issJWKS + `","sub":"alice","aud":"gatehouse","Exp":9999999999}`), auth.ReasonInvalidClaims},
		{"case variant ISS beside iss", pl(`{` + body + `,"ISS":"https://evil.test"}`), auth.ReasonInvalidClaims},
		{"case variant Sub beside sub", pl(`{` + body + `,"Sub":"admin"}`), auth.ReasonInvalidClaims},
		{"case variant SCOPE", pl(`{` + body + `,"SCOPE":"admin"}`), auth.ReasonInvalidClaims},
		{"case variant aUd", pl(`{` + body + `,"aUd":"gatehouse"}`), auth.ReasonInvalidClaims},
		{"long-s variant of sub", pl(`{` + body + `,"ſub":"admin"}`), auth.ReasonInvalidClaims},
		{"two claims differing in case only", pl(`{` + body + `,"role":"user","Role":"admin"}`), auth.ReasonInvalidClaims},
		{"case variant of a required claim", ed(claims(issPEM, "Tenant", "acme")), auth.ReasonInvalidClaims},
		{"case variant of the tier claim", ed(claims(issPEM, "tenant", "acme", "TIER", "enterprise")), auth.ReasonInvalidClaims},
		{"case variant header ALG", signRaw(t, "RS256", rsaKey(), `{"alg":"RS256","kid":"rsa-1","ALG":"none"}`, good), auth.ReasonMalformed},
		{"case variant header Kid", signRaw(t, "RS256", rsaKey(), `{"alg":"RS256","Kid":"rsa-1"}`, good), auth.ReasonMalformed},
		{"required claim missing", ed(claims(issPEM)), auth.ReasonMissingClaim},
		{"required claim null", ed(claims(issPEM, "tenant", json.RawMessage("null"))), auth.ReasonMissingClaim},
		{"tier claim not a string", ed(claims(issPEM, "tenant", "acme", "tier", 3)), auth.ReasonInvalidClaims},
	}
}

func headerAttacks(t *testing.T) []attack {
	rs := func(extra ...any) string { return sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS), extra...) }
	return []attack{
		{"typ of another token type", rs("typ", "dpop+jwt"), auth.ReasonUnsupportedHeader},
		{"typ not a string", rs("typ", 1), auth.ReasonUnsupportedHeader},
		{"crit header", rs("crit", []string{"exp"}), auth.ReasonUnsupportedHeader},
		{"unencoded payload (b64 false, crit)", rs("b64", false, "crit", []string{"b64"}), auth.ReasonUnsupportedHeader},
		{"compressed (zip)", rs("zip", "DEF"), auth.ReasonUnsupportedHeader},
	}
}

// TestSymmetricKeyInJWKS: a JWKS that publishes a symmetric key publishes the secret to
// everyone; such a key never verifies anything.
func TestSymmetricKeyInJWKS(t *testing.T) {
	oct, err := jwkset.NewJWKFromKey([]byte(secret), jwkset.JWKOptions{
		Marshal: jwkset.JWKMarshalOptions{Private: true}, Metadata: jwkset.JWKMetadataOptions{KID: "oct-1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := newJWKSServer(t, oct.Marshal(), jwk(t, &rsaKey().PublicKey, "rsa-1", ""))
	for _, algs := range [][]string{nil, {"RS256"}} {
		a := open(t, auth.Config{JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{
			{Issuer: issJWKS, Audiences: []string{"gatehouse"}, JWKSURL: srv.URL, Algorithms: algs},
		}}}, nil)
		_, err := bearer(a, sign(t, "HS256", "oct-1", []byte(secret), claims(issJWKS)))
		if auth.ReasonOf(err) != auth.ReasonAlgorithm {
			t.Fatalf("algorithms %q: got %v, want unsupported algorithm", algs, err)
		}
		if _, err := bearer(a, sign(t, "RS256", "rsa-1", rsaKey(), claims(issJWKS))); err != nil {
			t.Fatalf("the RSA key beside it: %v", err)
		}
	}
}
