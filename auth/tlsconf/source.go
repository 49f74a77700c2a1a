package tlsconf

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// Options are what a Source needs besides its configuration.
type Options struct {
	// Listener names the listener in logs ("boundary", "internal", "admin").
	Listener string
	// NextProtos are the ALPN protocols the listener speaks, in order of preference
	// (["h2", "http/1.1"] for HTTP, ["h2"] for gRPC).
	NextProtos []string
	// Log receives reloads and refused files; nil discards them.
	Log *slog.Logger
	// Now is the clock of the reload checks; nil means time.Now.
	Now func() time.Time
}

// ErrNoCertificate is wrapped by Open's error when a file holds no usable PEM block.
var ErrNoCertificate = errors.New("no PEM certificate")

// Source is the TLS configuration of one listener, built from the files of a Config and
// rebuilt when they change: at most every ReloadInterval a handshake reads the files again
// (one handshake at a time; the others go on with what is in force), and when their content
// changed and still makes a valid configuration, new handshakes use it. Connections already
// open keep the keys they agreed on. Files that fail (a key that does not match its
// certificate, a half-written file) are refused with a log line and the previous ones stay
// in force until the files change again. It is safe for concurrent use.
type Source struct {
	cfg       Config
	opts      Options
	interval  int64 // ReloadInterval in nanoseconds
	cur       atomic.Pointer[snapshot]
	nextCheck atomic.Int64 // Unix nanoseconds before which no handshake re-reads the files
}

// snapshot is what a Source serves: the configuration built from the last good files, and
// the content of the files last read (good or refused), to tell a change.
type snapshot struct {
	files [3][]byte // cert, key, client CA
	conf  *tls.Config
}

// Open reads the files of cfg (with its defaults applied) and returns their Source.
func Open(cfg Config, opts Options) (*Source, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Source{cfg: cfg, opts: opts, interval: int64(cfg.ReloadInterval)}
	files, err := s.read()
	if err != nil {
		return nil, err
	}
	conf, err := s.build(files)
	if err != nil {
		return nil, err
	}
	s.cur.Store(&snapshot{files: files, conf: conf})
	s.nextCheck.Store(opts.Now().UnixNano() + s.interval)
	return s, nil
}

// ServerConfig returns the configuration to serve the listener with: each handshake gets
// the configuration in force then (tls.Config.GetConfigForClient).
func (s *Source) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:         versions[s.cfg.MinVersion],
		NextProtos:         s.opts.NextProtos,
		GetConfigForClient: s.configForClient,
	}
}

// Certificate returns the leaf certificate in force.
func (s *Source) Certificate() *x509.Certificate { return s.cur.Load().conf.Certificates[0].Leaf }

// configForClient is the ServerConfig's GetConfigForClient.
func (s *Source) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	now := s.opts.Now().UnixNano()
	if next := s.nextCheck.Load(); now >= next && s.nextCheck.CompareAndSwap(next, now+s.interval) {
		s.Reload()
	}
	return s.cur.Load().conf, nil
}

// Reload reads the files now and, when their content changed, serves them if they make a
// valid configuration; it reports whether new files are in force.
func (s *Source) Reload() bool {
	old := s.cur.Load()
	files, err := s.read()
	if err != nil {
		s.opts.Log.Warn("TLS files not reloaded; the previous certificate stays in force", "listener", s.opts.Listener, "err", err)
		return false
	}
	if sameFiles(files, old.files) {
		return false
	}
	conf, err := s.build(files)
	if err != nil {
		// Remember the content refused, so that it is logged once, not on every check.
		s.cur.Store(&snapshot{files: files, conf: old.conf})
		s.opts.Log.Warn("TLS files refused; the previous certificate stays in force", "listener", s.opts.Listener, "err", err)
		return false
	}
	s.cur.Store(&snapshot{files: files, conf: conf})
	leaf := conf.Certificates[0].Leaf
	s.opts.Log.Info("TLS certificate reloaded", "listener", s.opts.Listener, "subject", leaf.Subject.String(),
		"not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	return true
}

func sameFiles(a, b [3][]byte) bool {
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// read returns the content of the certificate, key and client CA files.
func (s *Source) read() ([3][]byte, error) {
	var out [3][]byte
	for i, f := range [3]string{s.cfg.CertFile, s.cfg.KeyFile, s.cfg.ClientCAFile} {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return out, fmt.Errorf("tls: %w", err)
		}
		out[i] = b
	}
	return out, nil
}

// build makes the per-connection configuration of files.
func (s *Source) build(files [3][]byte) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(files[0], files[1])
	if err != nil {
		return nil, fmt.Errorf("tls: cert_file %s, key_file %s: %w", s.cfg.CertFile, s.cfg.KeyFile, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("tls: cert_file %s: %w", s.cfg.CertFile, err)
		}
	}
	conf := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   versions[s.cfg.MinVersion],
		ClientAuth:   clientAuths[s.cfg.ClientAuth],
		NextProtos:   s.opts.NextProtos,
	}
	if files[2] != nil {
		conf.ClientCAs = x509.NewCertPool()
		if !conf.ClientCAs.AppendCertsFromPEM(files[2]) {
			return nil, fmt.Errorf("tls: client_ca_file %s: %w", s.cfg.ClientCAFile, ErrNoCertificate)
		}
	}
	return conf, nil
}

// PeerClientConfig returns the configuration to dial the same listener of other replicas
// with (the internal listener's gatehouse.v1.PeerService): it presents this replica's
// certificate in force and verifies the peer's against the client CA in force — the CA
// every replica's certificate chains to when the listener asks for client certificates —
// or, without one, the system roots; the name checked is the one dialled (a host or an IP
// address: the certificates need it among their SANs).
func (s *Source) PeerClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion: versions[s.cfg.MinVersion],
		NextProtos: s.opts.NextProtos,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &s.cur.Load().conf.Certificates[0], nil
		},
		// The chain is verified by verifyPeer, against the CA in force when the connection
		// is made (the files reload), not against roots fixed here.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection:   s.verifyPeer,
	}
}

// verifyPeer verifies a replica's server certificate for PeerClientConfig.
func (s *Source) verifyPeer(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the peer presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots:         s.cur.Load().conf.ClientCAs, // nil: the system roots
		Intermediates: inter,
		DNSName:       cs.ServerName,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}
