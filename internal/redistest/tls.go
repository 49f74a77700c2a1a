package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// serverName is the name the server's certificate holds besides 127.0.0.1.
const serverName = "localhost"

// TLSFiles are the PEM files of a server started with [StartTLS]: the CA that signed both
// certificates, and a client certificate and key the server accepts.
type TLSFiles struct {
	CAFile, CertFile, KeyFile string

	serverCert, serverKey string
	config                *tls.Config // the harness's own client configuration
}

// StartTLS runs a redis-server that speaks only TLS on Addr and requires a client
// certificate signed by its CA ([Server.TLS]), all made for the test by a fresh CA whose
// server certificate names 127.0.0.1 and "localhost".
func StartTLS(t testing.TB) *Server {
	t.Helper()
	return start(t, newTLSFiles(t, t.TempDir()), nil)
}

// newTLSFiles writes a CA, a server and a client certificate with their keys in dir.
func newTLSFiles(t testing.TB, dir string) *TLSFiles {
	t.Helper()
	caKey, caCert, caDER := newCert(t, nil, nil, &x509.Certificate{
		Subject:  pkix.Name{CommonName: "redistest CA"},
		IsCA:     true,
		KeyUsage: x509.KeyUsageCertSign,
	})
	serverKey, _, serverDER := newCert(t, caCert, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: serverName},
		DNSNames:    []string{serverName},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	clientKey, _, clientDER := newCert(t, caCert, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "redistest client"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	f := &TLSFiles{
		CAFile:     writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER),
		CertFile:   writePEM(t, dir, "client.pem", "CERTIFICATE", clientDER),
		KeyFile:    writePEM(t, dir, "client-key.pem", "EC PRIVATE KEY", marshalKey(t, clientKey)),
		serverCert: writePEM(t, dir, "server.pem", "CERTIFICATE", serverDER),
		serverKey:  writePEM(t, dir, "server-key.pem", "EC PRIVATE KEY", marshalKey(t, serverKey)),
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	client, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	f.config = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{client}, ServerName: serverName, MinVersion: tls.VersionTLS12}
	return f
}

// newCert makes a certificate from tmpl with a new key, signed by parent (self-signed
// when parent is nil).
func newCert(t testing.TB, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	tmpl.BasicConstraintsValid = true
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func marshalKey(t testing.TB, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
