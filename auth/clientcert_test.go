package auth_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

func certOf(cn string, uris ...string) *x509.Certificate {
	c := &x509.Certificate{Subject: pkix.Name{CommonName: cn}, Raw: []byte(cn)}
	for _, u := range uris {
		p, _ := url.Parse(u)
		c.URIs = append(c.URIs, p)
	}
	return c
}

func TestCertIdentity(t *testing.T) {
	tests := []struct {
		name string
		cert *x509.Certificate
		id   string
		ok   bool
	}{
		{"SPIFFE id wins over CN", certOf("svc", "https://example.com/x", "spiffe://td/ns/a"), "spiffe://td/ns/a", true},
		{"CN without SPIFFE id", certOf("svc", "https://example.com/x"), "svc", true},
		{"neither", certOf(""), "", false},
		{"two SPIFFE ids", certOf("svc", "spiffe://td/a", "spiffe://td/b"), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if id, ok := auth.CertIdentity(tt.cert); id != tt.id || ok != tt.ok {
				t.Fatalf("got %q %v, want %q %v", id, ok, tt.id, tt.ok)
			}
		})
	}
}

func TestClientCertAuthentication(t *testing.T) {
	a, err := auth.Open(context.Background(), auth.Config{
		APIKeys:    []auth.APIKeyConfig{{Name: "k", Hash: sha256Hex("key-1")}},
		ClientCert: &auth.ClientCertConfig{Scopes: []string{"calc"}, Tier: "gold"},
	}, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Close() }()
	cert := certOf("svc", "spiffe://td/svc")
	cert.NotAfter = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	p, err := a.Authenticate(context.Background(), gateway.Credentials{ClientCert: cert})
	if err != nil || p.Subject != "spiffe://td/svc" || p.Tier != "gold" || !slices.Equal(p.Scopes, []string{"calc"}) || p.Anonymous {
		t.Fatalf("%+v %v", p, err)
	}
	if !p.Expires.Equal(cert.NotAfter) {
		t.Errorf("expires %v, want the certificate's NotAfter %v: a connection it authenticated closes then", p.Expires, cert.NotAfter)
	}
	details, _ := p.Claims[auth.ClaimCert].(map[string]any)
	if details["spiffe_id"] != "spiffe://td/svc" || details["subject_cn"] != "svc" {
		t.Fatalf("claims %v", p.Claims)
	}
	// An API key presented with the certificate is the caller's credential.
	if p, err := a.Authenticate(context.Background(), gateway.Credentials{ClientCert: cert, APIKey: "key-1"}); err != nil || p.Subject != "k" {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := a.Authenticate(context.Background(), gateway.Credentials{ClientCert: certOf("")}); auth.ReasonOf(err) != auth.ReasonCertNoIdentity {
		t.Fatalf("certificate without identity: %v", err)
	}
	if _, err := a.Authenticate(context.Background(), gateway.Credentials{}); auth.ReasonOf(err) != auth.ReasonNoCredential {
		t.Fatalf("no credential: %v", err)
	}
}
