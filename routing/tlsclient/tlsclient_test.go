package tlsclient_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/routing/tlsclient"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  tlsclient.Config
		ok   bool
	}{
		{"system roots", tlsclient.Config{ServerName: "backend.internal"}, true},
		{"missing CA file", tlsclient.Config{CAFile: filepath.Join(dir, "missing.pem")}, false},
		{"CA file without a certificate", tlsclient.Config{CAFile: notPEM}, false},
		{"key without certificate", tlsclient.Config{KeyFile: notPEM}, false},
		{"unreadable key pair", tlsclient.Config{CertFile: notPEM, KeyFile: notPEM}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc, err := tt.cfg.Load()
			if (err == nil) != tt.ok {
				t.Fatalf("err %v", err)
			}
			if tt.ok && (tc.MinVersion != tls.VersionTLS12 || tc.ServerName != tt.cfg.ServerName) {
				t.Fatalf("config %+v", tc)
			}
		})
	}
}
