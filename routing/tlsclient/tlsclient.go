// Package tlsclient is the transport security the gateway uses when it dials a backend: the
// one TLS client configuration shared by gRPC backends and MCP upstreams.
package tlsclient

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// Config is transport security for a connection the gateway opens.
type Config struct {
	// CAFile verifies the peer's certificate (default: the system roots).
	CAFile string `yaml:"ca_file" json:"ca_file,omitempty"`
	// CertFile and KeyFile are the gateway's client certificate, for mTLS.
	CertFile string `yaml:"cert_file" json:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file" json:"key_file,omitempty"`
	// ServerName overrides the name verified in the peer's certificate.
	ServerName string `yaml:"server_name" json:"server_name,omitempty"`
}

// Load reads the files c names and returns the TLS client configuration (TLS 1.2 at least).
func (c Config) Load() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls ca_file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls ca_file %s holds no PEM certificate", c.CAFile)
		}
	}
	if c.CertFile != "" || c.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
