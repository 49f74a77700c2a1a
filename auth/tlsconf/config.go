package tlsconf

import (
	"crypto/tls"
	"fmt"
	"path/filepath"
	"time"
)

// Config is the tls section of a listener (server.boundary.tls, server.internal.tls,
// server.admin.tls).
type Config struct {
	// CertFile is the PEM certificate chain the listener presents (leaf first).
	CertFile string `yaml:"cert_file" json:"cert_file"`
	// KeyFile is the PEM private key of CertFile's leaf.
	KeyFile string `yaml:"key_file" json:"key_file"`
	// ClientCAFile is a PEM bundle of the CAs whose client certificates the listener
	// accepts; empty: no client certificate is verified.
	ClientCAFile string `yaml:"client_ca_file" json:"client_ca_file,omitempty"`
	// ClientAuth is the client certificate policy: none, request, verify_if_given or
	// require (default: require with ClientCAFile, none without).
	ClientAuth string `yaml:"client_auth" json:"client_auth,omitempty"`
	// MinVersion is the lowest TLS version accepted: "1.2" (the default) or "1.3".
	MinVersion string `yaml:"min_version" json:"min_version,omitempty"`
	// ReloadInterval is how often, at most, the files are read again to see whether they
	// changed (default 5s); the check runs on a handshake, never in the background.
	ReloadInterval time.Duration `yaml:"reload_interval" json:"reload_interval,omitempty"`
}

// Client certificate policies (Config.ClientAuth).
const (
	// ClientAuthNone asks for no client certificate.
	ClientAuthNone = "none"
	// ClientAuthRequest asks for a certificate but neither requires nor verifies it: such a
	// certificate never becomes the caller's identity.
	ClientAuthRequest = "request"
	// ClientAuthVerifyIfGiven verifies a certificate the client presents and admits a
	// client without one.
	ClientAuthVerifyIfGiven = "verify_if_given"
	// ClientAuthRequire refuses, at the handshake, a client without a certificate that
	// verifies against ClientCAFile.
	ClientAuthRequire = "require"
)

// Defaults.
const (
	DefaultMinVersion     = "1.2"
	DefaultReloadInterval = 5 * time.Second
)

var clientAuths = map[string]tls.ClientAuthType{
	ClientAuthNone:          tls.NoClientCert,
	ClientAuthRequest:       tls.RequestClientCert,
	ClientAuthVerifyIfGiven: tls.VerifyClientCertIfGiven,
	ClientAuthRequire:       tls.RequireAndVerifyClientCert,
}

var versions = map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}

// WithDefaults returns c with every zero setting at its default.
func (c Config) WithDefaults() Config {
	if c.ClientAuth == "" {
		c.ClientAuth = ClientAuthNone
		if c.ClientCAFile != "" {
			c.ClientAuth = ClientAuthRequire
		}
	}
	if c.MinVersion == "" {
		c.MinVersion = DefaultMinVersion
	}
	if c.ReloadInterval == 0 {
		c.ReloadInterval = DefaultReloadInterval
	}
	return c
}

// WithBaseDir returns c with its relative file paths joined to dir (the directory of the
// configuration file); empty and absolute paths are kept.
func (c Config) WithBaseDir(dir string) Config {
	under := func(p string) string {
		if dir == "" || p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	c.CertFile, c.KeyFile, c.ClientCAFile = under(c.CertFile), under(c.KeyFile), under(c.ClientCAFile)
	return c
}

// Problem is one problem of a tls section; Path is relative to the section.
type Problem struct {
	Path string
	Msg  string
}

// Validate checks the settings the schema cannot (c with its defaults applied); it does
// not read the files (Open does).
func (c Config) Validate() []Problem {
	var out []Problem
	if c.CertFile == "" || c.KeyFile == "" {
		out = append(out, Problem{"", "cert_file and key_file are both required"})
	}
	if _, ok := clientAuths[c.ClientAuth]; !ok {
		out = append(out, Problem{"client_auth", fmt.Sprintf("%q is not one of none, request, verify_if_given, require", c.ClientAuth)})
	}
	if (c.ClientAuth == ClientAuthVerifyIfGiven || c.ClientAuth == ClientAuthRequire) && c.ClientCAFile == "" {
		out = append(out, Problem{"client_ca_file", "client_auth " + c.ClientAuth + " needs the CAs to verify client certificates with"})
	}
	if _, ok := versions[c.MinVersion]; !ok {
		out = append(out, Problem{"min_version", fmt.Sprintf("%q is not 1.2 or 1.3", c.MinVersion)})
	}
	if c.ReloadInterval < 0 {
		out = append(out, Problem{"reload_interval", "must not be negative"})
	}
	return out
}
