package server

import (
	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// The error codes of a bearer challenge (RFC 6750 §3.1).
const (
	challengeInvalidRequest = "invalid_request"
	challengeInvalidToken   = "invalid_token"
)

// bearerChallenge returns the WWW-Authenticate value of the 401 err: Bearer realm="gatehouse",
// with error="invalid_token" when a credential was presented and refused, or
// error="invalid_request" when the request presented several (RFC 6750 §3.1; a request
// without one, or with another scheme, gets no error code), and resource_metadata (RFC 9728
// §5.1) when resourceMetadata is not empty. It never contains any part of the credential.
func bearerChallenge(err *gateway.Error, resourceMetadata string) string {
	out := `Bearer realm="gatehouse"`
	switch auth.ReasonOf(err) {
	case "", auth.ReasonNoCredential, auth.ReasonNotLoopback, auth.ReasonUnsupportedScheme:
	case auth.ReasonAmbiguous:
		out += `, error="` + challengeInvalidRequest + `"`
	default:
		out += `, error="` + challengeInvalidToken + `"`
	}
	if resourceMetadata != "" {
		out += `, resource_metadata="` + resourceMetadata + `"`
	}
	return out
}
