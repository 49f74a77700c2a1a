package auth

import (
	"errors"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Reason says why a credential was refused. It travels to the caller in error.data.reason
// of the AUTHENTICATION_FAILED (4001) error, so it names a class of failure and never any
// part of the credential.
type Reason string

// Reasons for refusing a credential.
const (
	ReasonNoCredential      Reason = "no credential"                //nolint:gosec // a reason, not a credential: nothing presented, anonymous access off
	ReasonNotLoopback       Reason = "anonymous not allowed"        // anonymous access is loopback-only and the peer is not
	ReasonAmbiguous         Reason = "ambiguous credentials"        // a bearer token and an API key together
	ReasonUnsupportedScheme Reason = "unsupported scheme"           // an Authorization scheme other than Bearer and ApiKey
	ReasonNotAccepted       Reason = "credential not accepted"      // a kind of credential this gateway verifies none of
	ReasonTooLarge          Reason = "token too large"              // over max_token_bytes, refused before parsing
	ReasonMalformed         Reason = "malformed token"              // not three base64url segments of JSON objects
	ReasonUnsupportedHeader Reason = "unsupported header"           // crit, zip, or a typ other than JWT/at+jwt
	ReasonAlgorithm         Reason = "unsupported algorithm"        // alg not allowed for the issuer (none never is)
	ReasonInvalidClaims     Reason = "invalid claims"               // duplicate or case-variant names, claims of the wrong type
	ReasonUnknownIssuer     Reason = "unknown issuer"               // iss names no configured issuer
	ReasonUnknownKey        Reason = "unknown key"                  // no key of the issuer has the token's kid
	ReasonBadSignature      Reason = "bad signature"                // no key allowed for alg verifies the signature
	ReasonExpired           Reason = "expired"                      // exp (+ leeway) has passed
	ReasonNotYetValid       Reason = "not yet valid"                // nbf (- leeway) is in the future
	ReasonIssuedInFuture    Reason = "issued in the future"         // iat (- leeway) is in the future
	ReasonWrongAudience     Reason = "wrong audience"               // aud names none of the issuer's audiences
	ReasonMissingClaim      Reason = "missing claim"                // sub, exp, aud or a required claim is absent
	ReasonUnknownAPIKey     Reason = "unknown api key"              // the API key matches no configured hash
	ReasonRevoked           Reason = "revoked"                      // verified, but its jti or its subject is on the revocation list
	ReasonCertNoIdentity    Reason = "certificate without identity" // a verified client certificate with no SPIFFE id and no subject CN
	ReasonOtherSubject      Reason = "different subject"            // a credential renewing a connection's names another subject or issuer
)

// DataReason is the member of error.data that carries the Reason.
const DataReason = "reason"

// refusals holds one immutable error per reason, so refusing allocates nothing.
var refusals = func() map[Reason]*gateway.Error {
	m := make(map[Reason]*gateway.Error)
	for _, r := range []Reason{
		ReasonNoCredential, ReasonNotLoopback, ReasonAmbiguous, ReasonUnsupportedScheme, ReasonNotAccepted,
		ReasonTooLarge, ReasonMalformed, ReasonUnsupportedHeader, ReasonAlgorithm, ReasonInvalidClaims,
		ReasonUnknownIssuer, ReasonUnknownKey, ReasonBadSignature, ReasonExpired, ReasonNotYetValid,
		ReasonIssuedInFuture, ReasonWrongAudience, ReasonMissingClaim, ReasonUnknownAPIKey, ReasonRevoked,
		ReasonCertNoIdentity, ReasonOtherSubject,
	} {
		m[r] = gateway.NewError(schemas.CodeAuthentication).With(DataReason, string(r))
	}
	return m
}()

// refuse returns the AUTHENTICATION_FAILED error for r. Its cause is empty on purpose: a
// cause is logged, and what went wrong in detail often involves the credential.
func refuse(r Reason) *gateway.Error { return refusals[r] }

// ReasonOf returns the reason of an error Authenticate or Verifier.Verify returned, or ""
// when err is not such a refusal.
func ReasonOf(err error) Reason {
	e, ok := errors.AsType[*gateway.Error](err)
	if !ok || e.Code() != schemas.CodeAuthentication {
		return ""
	}
	r, _ := e.Data()[DataReason].(string)
	return Reason(r)
}
