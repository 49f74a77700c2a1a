package server

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// relativeKeysConfig names the issuer's JWK Set and the key ring's key file by paths relative
// to the configuration file.
const relativeKeysConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  jwt:
    issuers:
      - {issuer: gatehouse-dev, audiences: [gatehouse], jwks_file: keys/jwks.json}
  keyring: {key_files: [keys/ring.pem]}
routing:
  demo: {}
`

// TestAuthPathsResolveAgainstTheConfigFile: a configuration naming keys/jwks.json and
// keys/ring.pem loads them from beside itself whatever the working directory — given by an
// absolute path from an unrelated directory, or by a relative one — and serves: a token of
// the issuer is accepted and the ring's key is published. The same text without a file name
// (as the embedded default is parsed) resolves against the working directory, where the keys
// are not.
func TestAuthPathsResolveAgainstTheConfigFile(t *testing.T) {
	root := t.TempDir()
	confDir := filepath.Join(root, "conf")
	if err := os.MkdirAll(filepath.Join(confDir, "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	jwks, err := os.ReadFile("../configs/examples/dev-jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(confDir, "keys"), "jwks.json", string(jwks))
	ringX := writeRingKey(t, filepath.Join(confDir, "keys", "ring.pem"))
	file := writeFile(t, confDir, "gatehouse.yaml", relativeKeysConfig)
	token := devToken(t, "alice") // reads the development key relative to the package: before any Chdir
	elsewhere := t.TempDir()

	tests := []struct {
		name string
		cwd  string
		path string
	}{
		{"absolute path from another directory", elsewhere, file},
		{"relative path from the parent directory", root, filepath.Join("conf", "gatehouse.yaml")},
		{"bare name from the file's directory", confDir, "gatehouse.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(tt.cwd)
			cfg, err := Load(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			ts := startConfig(t, cfg, nil)
			status, _, body := ts.post(`{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`, "Authorization", "Bearer "+token)
			if status != http.StatusOK || !strings.Contains(body, `"result":19`) {
				t.Fatalf("call with a token of the issuer: %d %s", status, body)
			}
			if _, set := servedKids(t, ts); !strings.Contains(set, ringX) {
				t.Fatalf("the ring's key is not published: %s", set)
			}
		})
	}

	t.Run("no file name: the working directory", func(t *testing.T) {
		t.Chdir(elsewhere)
		cfg, err := Parse("", []byte(relativeKeysConfig))
		if err != nil {
			t.Fatal(err)
		}
		if s, err := New(cfg, Options{}); err == nil {
			s.closeCore()
			t.Fatal("the keys were found although the working directory has none")
		} else if !strings.Contains(err.Error(), filepath.Join("keys", "ring.pem")) {
			t.Fatalf("error %q does not name the missing file", err)
		}
	})
}

// writeRingKey writes a new Ed25519 private key as PKCS #8 PEM to path and returns its
// public key as a JWK's x member.
func writeRingKey(t *testing.T, path string) string {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(pub)
}
