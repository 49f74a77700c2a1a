package auth_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// knownReasons are the reasons a refusal may carry.
var knownReasons = map[auth.Reason]bool{
	auth.ReasonNoCredential: true, auth.ReasonNotLoopback: true, auth.ReasonAmbiguous: true, auth.ReasonUnsupportedScheme: true,
	auth.ReasonNotAccepted: true, auth.ReasonTooLarge: true, auth.ReasonMalformed: true, auth.ReasonUnsupportedHeader: true,
	auth.ReasonAlgorithm: true, auth.ReasonInvalidClaims: true, auth.ReasonUnknownIssuer: true, auth.ReasonUnknownKey: true,
	auth.ReasonBadSignature: true, auth.ReasonExpired: true, auth.ReasonNotYetValid: true, auth.ReasonIssuedInFuture: true,
	auth.ReasonWrongAudience: true, auth.ReasonMissingClaim: true, auth.ReasonUnknownAPIKey: true,
}

// FuzzAuthenticateBearer drives the whole token path — size check, splitting, base64,
// strict JSON, header rules, issuer choice, key lookup, signature, claims — with arbitrary
// bearer values. Whatever the input: no panic; a refusal is AUTHENTICATION_FAILED with a
// known reason and without the input in its text or data; an acceptance names a subject.
func FuzzAuthenticateBearer(f *testing.F) {
	pemFile := writeFile(f, "rsa.pem", publicPEM(f, &rsaKey().PublicKey))
	edFile := writeFile(f, "ed.pem", publicPEM(f, edKey().Public()))
	a := open(f, auth.Config{JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{
		{Issuer: issPEM, Audiences: []string{"gatehouse"}, PEMFiles: []string{pemFile, edFile}},
		{Issuer: issSecret, Audiences: []string{"gatehouse"}, Secret: secret, RequiredClaims: []string{"tenant"}, TierClaim: "tier"},
	}}}, nil)
	rsaKID := must(auth.Thumbprint(&rsaKey().PublicKey))
	seeds := []string{
		sign(f, "RS256", rsaKID, rsaKey(), claims(issPEM)),
		sign(f, "PS256", "", rsaKey(), claims(issPEM, "scp", []string{"a", "b"})),
		sign(f, "EdDSA", "", edKey(), claims(issPEM, "nbf", now.Unix())),
		sign(f, "HS256", "", []byte(secret), claims(issSecret, "tenant", "acme", "tier", "gold")),
		sign(f, "HS256", "", []byte(secret), claims(issSecret, "tenant", "acme", "Tier", "gold")),
		signRaw(f, "HS256", []byte(secret), `{"alg":"HS256","alg":"none"}`, payload(claims(issSecret))),
		signRaw(f, "HS256", []byte(secret), `{"alg":"HS256"}`, `{"iss":"`+issSecret+`","sub":"a","sub":"b"}`),
		seg([]byte(`{"alg":"none"}`)) + "." + seg([]byte(payload(claims(issPEM)))) + ".",
		"a.b.c", "..", "ApiKey x", "Basic eA==", "", strings.Repeat("A", 9000),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		p, err := bearer(a, tok)
		if err == nil {
			if p.Subject == "" || p.Claims == nil {
				t.Fatalf("accepted without a subject: %+v", p)
			}
			return
		}
		ge := gateway.AsError(err)
		if ge.Code() != schemas.CodeAuthentication || !knownReasons[auth.ReasonOf(err)] {
			t.Fatalf("refusal %v", err)
		}
		if len(tok) >= 8 && (strings.Contains(err.Error(), tok) || strings.Contains(fmt.Sprint(ge.Data()), tok)) {
			t.Fatalf("the refusal quotes the token: %v", err)
		}
	})
}

// bearerOf is Credentials for a bearer value, for benchmarks.
func bearerOf(tok string) gateway.Credentials { return gateway.Credentials{Bearer: tok} }
