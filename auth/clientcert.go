package auth

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"strings"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// ClientCertConfig is what a caller authenticated by a client certificate holds
// (auth.client_cert). The identity itself comes from the certificate; the certificate
// was verified by the listener's TLS handshake against its client_ca_file, before any
// request (server.*.tls).
type ClientCertConfig struct {
	// Scopes are the scopes every caller authenticated by a client certificate holds.
	Scopes []string `yaml:"scopes" json:"scopes,omitempty"`
	// Tier is their client tier (default "standard").
	Tier string `yaml:"tier" json:"tier,omitempty"`
}

// ClaimCert is the claim under which a principal authenticated by a client certificate
// carries the certificate's details, and which marks it as such: a map of spiffe_id (when
// the certificate has one), subject_cn, issuer_cn, serial (hex) and sha256 (the hex
// fingerprint of the certificate). Policies read it as claims.cert.
const ClaimCert = "cert"

// clientCerts admits callers by the client certificate their connection verified.
type clientCerts struct {
	scopes []string
	tier   string
}

// newClientCerts returns the admission of client certificates with the grants of c (none
// when c is nil: such callers are identified, and hold no scope).
func newClientCerts(c *ClientCertConfig) *clientCerts {
	cc := &clientCerts{tier: DefaultTier}
	if c != nil {
		cc.scopes = c.Scopes
		if c.Tier != "" {
			cc.tier = c.Tier
		}
	}
	return cc
}

// admit returns the principal of a verified client certificate: its subject is the
// certificate's identity (CertIdentity).
func (c *clientCerts) admit(cert *x509.Certificate) (gateway.Principal, error) {
	id, ok := CertIdentity(cert)
	if !ok {
		return gateway.Principal{}, refuse(ReasonCertNoIdentity)
	}
	sum := sha256.Sum256(cert.Raw)
	details := map[string]any{
		"subject_cn": cert.Subject.CommonName,
		"issuer_cn":  cert.Issuer.CommonName,
		"serial":     cert.SerialNumber.Text(16),
		"sha256":     hex.EncodeToString(sum[:]),
	}
	if spiffe := spiffeID(cert); spiffe != "" {
		details["spiffe_id"] = spiffe
	}
	return gateway.Principal{
		Subject: id,
		Scopes:  c.scopes,
		Tier:    c.tier,
		Claims:  map[string]any{"sub": id, ClaimCert: details},
		// The certificate stops being valid then: a connection it authenticated closes.
		Expires: cert.NotAfter,
	}, nil
}

// CertIdentity returns the identity a client certificate authenticates: its SPIFFE id (the
// URI SAN of scheme spiffe) when it has exactly one, else its subject's common name; ok is
// false when it has neither (or several SPIFFE ids, which the SPIFFE X.509-SVID
// specification forbids).
func CertIdentity(cert *x509.Certificate) (id string, ok bool) {
	if id := spiffeID(cert); id != "" {
		return id, true
	}
	if spiffeCount(cert) > 1 {
		return "", false
	}
	return cert.Subject.CommonName, cert.Subject.CommonName != ""
}

// spiffeID returns the certificate's only SPIFFE id, "" when it has none or several.
func spiffeID(cert *x509.Certificate) string {
	if spiffeCount(cert) != 1 {
		return ""
	}
	for _, u := range cert.URIs {
		if strings.EqualFold(u.Scheme, "spiffe") {
			return u.String()
		}
	}
	return ""
}

func spiffeCount(cert *x509.Certificate) int {
	n := 0
	for _, u := range cert.URIs {
		if strings.EqualFold(u.Scheme, "spiffe") {
			n++
		}
	}
	return n
}
