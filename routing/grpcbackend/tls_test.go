package grpcbackend_test

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

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
)

// pki is a throwaway certificate authority with a server and a client certificate.
type pki struct {
	dir                                   string
	pool                                  *x509.CertPool
	serverCert                            tls.Certificate
	caFile, clientCertFile, clientKeyFile string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir(), pool: x509.NewCertPool()}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p.pool.AddCert(ca)
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", caDER)
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, dns []string) ([]byte, *ecdsa.PrivateKey) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	serverDER, serverKey := issue(2, "calculator", x509.ExtKeyUsageServerAuth, []string{"calculator.test"})
	p.serverCert = tls.Certificate{Certificate: [][]byte{serverDER}, PrivateKey: serverKey}
	clientDER, clientKey := issue(3, "gatehouse", x509.ExtKeyUsageClientAuth, nil)
	p.clientCertFile = p.write(t, "client.pem", "CERTIFICATE", clientDER)
	keyDER, _ := x509.MarshalECPrivateKey(clientKey)
	p.clientKeyFile = p.write(t, "client-key.pem", "EC PRIVATE KEY", keyDER)
	return p
}

func (p *pki) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveMTLS runs the calculator requiring a client certificate from the CA.
func serveMTLS(t *testing.T, p *pki) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	creds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{p.serverCert}, ClientCAs: p.pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	gs := demo.NewCalculatorServer(grpc.Creds(creds))
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String()
}

func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	addr := serveMTLS(t, p)
	methods := map[string]string{"subtract": calc + "/Subtract"}
	t.Run("with the client certificate", func(t *testing.T) {
		b := newBackend(t, grpcbackend.Config{Name: "tls", Address: addr, Descriptors: grpcbackend.DescriptorsConfig{Reflection: true},
			Methods: methods, Unwrap: map[string]string{"subtract": "result"},
			TLS: &grpcbackend.TLSConfig{CAFile: p.caFile, CertFile: p.clientCertFile, KeyFile: p.clientKeyFile, ServerName: "calculator.test"}})
		waitLoaded(t, b)
		if got, err := invoke(t, b, "subtract", `[42,23]`); err != nil || got != "19" {
			t.Fatalf("got %s %v", got, err)
		}
	})
	t.Run("without it the backend refuses", func(t *testing.T) {
		b := newBackend(t, grpcbackend.Config{Name: "tls", Address: addr, Descriptors: protosSource(), Methods: methods,
			TLS: &grpcbackend.TLSConfig{CAFile: p.caFile, ServerName: "calculator.test"}})
		waitLoaded(t, b)
		if _, err := invoke(t, b, "subtract", `[1,2]`); err == nil || err.Code() != -32020 {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a wrong server name is refused", func(t *testing.T) {
		b := newBackend(t, grpcbackend.Config{Name: "tls", Address: addr, Descriptors: protosSource(), Methods: methods,
			TLS: &grpcbackend.TLSConfig{CAFile: p.caFile, CertFile: p.clientCertFile, KeyFile: p.clientKeyFile, ServerName: "evil.test"}})
		waitLoaded(t, b)
		if _, err := invoke(t, b, "subtract", `[1,2]`); err == nil || err.Code() != -32020 {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("bad files are config errors", func(t *testing.T) {
		_, err := grpcbackend.New(grpcbackend.Config{Name: "tls", Address: addr, Descriptors: protosSource(),
			TLS: &grpcbackend.TLSConfig{CAFile: filepath.Join(p.dir, "missing.pem")}}, nil, time.Now)
		if err == nil {
			t.Fatal("a missing CA file was accepted")
		}
	})
}
