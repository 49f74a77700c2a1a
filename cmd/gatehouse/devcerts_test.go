package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/auth/tlsconf"
)

func TestDevCerts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	var out, errOut bytes.Buffer
	if code := run([]string{"dev-certs", dir}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	modes := map[string]os.FileMode{"ca.pem": 0o644, "ca-key.pem": 0o600, "server.pem": 0o644, "server-key.pem": 0o600,
		"client.pem": 0o644, "client-key.pem": 0o600}
	for name, want := range modes {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", name, fi.Mode().Perm(), err, want)
		}
	}
	caPEM, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.pem holds no certificate")
	}
	server, err := tls.LoadX509KeyPair(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"localhost", "127.0.0.1", "::1"} {
		if _, err := server.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
			t.Errorf("server certificate for %s: %v", host, err)
		}
	}
	client, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if id, ok := auth.CertIdentity(client.Leaf); !ok || id != tlsconf.DevClientID {
		t.Errorf("client identity %q %v, want %s", id, ok, tlsconf.DevClientID)
	}

	// A second run refuses to replace the set, unless forced.
	out.Reset()
	errOut.Reset()
	if code := run([]string{"dev-certs", dir}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "--force") {
		t.Fatalf("second run: exit %d: %s", code, errOut.String())
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "ca.pem")); !bytes.Equal(again, caPEM) {
		t.Fatal("ca.pem replaced without --force")
	}
	if code := run([]string{"dev-certs", "--force", dir}, &out, &errOut); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, errOut.String())
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "ca.pem")); bytes.Equal(again, caPEM) {
		t.Fatal("ca.pem not replaced with --force")
	}
	if code := run([]string{"dev-certs"}, &out, &errOut); code != 2 {
		t.Fatalf("no DIR: exit %d", code)
	}
}
